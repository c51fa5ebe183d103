import { isAddress } from 'viem';
import { z } from 'zod';
import { paymentSchema } from '../wallets/pay-schemas.js';
import { approvalQueueSchema } from '../wallets/policy-schemas.js';
import { AGENT_STATUSES, AGENT_TYPES, MODEL_PROVIDERS, TURN_STATUSES } from './tables.js';

/** What an agent costs: one month of a hosted runtime, in credit cents (the spec's 10 USD). */
export const AGENT_PRICE_CENTS = 1000;

export const createAgentBody = z.object({
  name: z.string().trim().min(1).max(100),
  type: z.enum(AGENT_TYPES),
});

export const runtimeInstanceSchema = z.object({
  id: z.string(),
  appName: z.string(),
  url: z.string().nullable().describe('where the runtime answers; null when that is an internal address only the service reaches'),
  cpus: z.number().int(),
  memoryMb: z.number().int(),
  volumeSizeGb: z.number().int(),
  startedAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  stoppedAt: z.string().nullable(),
  removedAt: z.string().nullable(),
  removeAt: z
    .string()
    .nullable()
    .describe("a stopped runtime: when its volume, and with it the agent's histories, is removed (export before then); null while it runs (extension)"),
});

export const agentSchema = z.object({
  id: z.string(),
  userId: z.string(),
  name: z.string(),
  type: z.enum(AGENT_TYPES),
  spec: z.literal('monthly'),
  status: z
    .enum(AGENT_STATUSES)
    .describe('pending (deployment queued or retrying), running, stopped (by its user), expired (its month ended), failed (first deployment gave up; refunded), volume_lost (its data is gone; not started on an empty volume)'),
  attempts: z.number().int(),
  lastError: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const listedAgentSchema = agentSchema.extend({ runtimeInstance: runtimeInstanceSchema.nullable() });

const chargeSchema = z.object({ amountUsdCents: z.number().int(), balanceAfterUsdCents: z.number().int() });
/** A purchase and a renewal answer alike: the agent as GET /agents/{agentId} shows it, and what was charged. */
export const createAgentResult = z.object({ agent: listedAgentSchema, charge: chargeSchema });

export type AgentView = z.infer<typeof agentSchema>;
export type ListedAgentView = z.infer<typeof listedAgentSchema>;
export type Purchase = z.infer<typeof createAgentResult>;
export type Renewal = z.infer<typeof renewResult>;
export type RuntimeInstanceView = z.infer<typeof runtimeInstanceSchema>;

/** Chat bounds (the spec: at least one message; session 1–100, default main). Ours: at most 100 messages of 32 KiB each. */
export const CHAT_LIMITS = { maxMessages: 100, maxContentChars: 32 * 1024, bodyBytes: 4 * 1024 * 1024 } as const;

export const agentIdParams = z.object({ agentId: z.uuid() });

export const chatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string().max(CHAT_LIMITS.maxContentChars),
});

export const chatBody = z.object({
  messages: z.array(chatMessageSchema).min(1).max(CHAT_LIMITS.maxMessages),
  session: z.string().min(1).max(100).default('main'),
});

export const chatResult = z.object({ message: chatMessageSchema, raw: z.unknown().nullable(), text: z.string() });
const sessionName = z.string().min(1).max(100);
export const historyQuery = z.object({ session: sessionName.default('main') });
export const sessionParams = agentIdParams.extend({ session: sessionName });
/** A wallet payment of an agent, with the tool call's turn when a turn made it (extension). */
export const agentPaymentSchema = paymentSchema.extend({
  kind: z.enum(['tool', 'withdrawal']).describe('paid by the tool (pay_and_call), or a withdrawal its user sent'),
  turnId: z.string().nullable().describe('the chat turn whose tool call paid'),
  session: z.string().nullable(),
});
export type AgentPaymentView = z.infer<typeof agentPaymentSchema>;

export const turnSchema = z.object({
  id: z.string(),
  status: z.enum(TURN_STATUSES).describe('running, completed, or failed (the provider, the budget, a shutdown, or the service died mid-turn)'),
  error: z.string().nullable(),
  requestId: z.string().nullable(),
  tokens: z.number().int().nullable().describe('model tokens the turn used; null when the runtime did not answer'),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  payments: z.array(agentPaymentSchema).describe("what the turn's tool calls paid (signed), whatever the turn's end"),
});

export const chatHistory = z.object({
  messages: z.array(chatMessageSchema),
  raw: z.array(z.record(z.string(), z.unknown())).describe("the whole transcript: messages, the tool calls a runtime_b agent made and their results, each entry with its turnId"),
  turns: z.array(turnSchema).describe("the session's turns, oldest first (extension)"),
});
export const sessionSummarySchema = z.object({ session: z.string(), messages: z.number().int(), updatedAt: z.string() });

/** The model each provider answers with unless the agent's config names another. */
export const DEFAULT_MODELS = { openai: 'gpt-4o-mini', anthropic: 'claude-3-5-haiku-latest', openrouter: 'openai/gpt-4o-mini' } as const;
export const DEFAULT_MAX_OUTPUT_TOKENS = 1024;
/** Bounds of the bot's settings (PUT /agents/{agentId}/config). */
export const BOT_SETTINGS_LIMITS = { systemPromptChars: 8_000, maxOutputTokens: 8_192 } as const;

const modelName = z.string().trim().min(1).max(200).regex(/^[\w.:/@-]+$/, 'letters, digits and . _ : / @ - only');
export const modelsSchema = z.strictObject({ openai: modelName.optional(), anthropic: modelName.optional(), openrouter: modelName.optional() });
export const botSettingsSchema = z.strictObject({
  systemPrompt: z.string().max(BOT_SETTINGS_LIMITS.systemPromptChars).optional().describe('put before every session (not stored in its history)'),
  temperature: z.number().min(0).max(2).optional(),
  maxOutputTokens: z.number().int().min(1).max(BOT_SETTINGS_LIMITS.maxOutputTokens).optional().describe(`the most a reply may be; default ${DEFAULT_MAX_OUTPUT_TOKENS}`),
});

export const runtimeConfigSchema = z.object({
  createdAt: z.string(),
  id: z.string(),
  instanceId: z.string().nullable(),
  updatedAt: z.string(),
  models: modelsSchema.nullable().describe('the model each provider uses; null: the defaults'),
  botSettings: botSettingsSchema.nullable(),
});
export const configBody = z
  .strictObject({ models: modelsSchema.nullable().optional(), botSettings: botSettingsSchema.nullable().optional() })
  .refine((body) => body.models !== undefined || body.botSettings !== undefined, 'set models, botSettings or both (null restores the defaults)');

export const setProviderBody = z.object({ provider: z.enum(MODEL_PROVIDERS), apiKey: z.string().min(1).max(1000) });
export const providerEntrySchema = z.object({ provider: z.enum(MODEL_PROVIDERS), apiKey: z.string().describe('masked: only the start and end are shown') });

export type ChatBody = z.infer<typeof chatBody>;
export type ConfigBody = z.infer<typeof configBody>;
export type ChatResult = z.infer<typeof chatResult>;
export type ChatHistory = z.infer<typeof chatHistory>;
export type RuntimeConfigView = z.infer<typeof runtimeConfigSchema>;
export type ProviderEntry = z.infer<typeof providerEntrySchema>;

const atomic = z.string().regex(/^\d{1,30}$/, 'must be a whole number of atomic units, as a string');

export const budgetBody = z
  .object({
    dailyTokens: z.number().int().min(0).max(100_000_000).optional().describe('model tokens (input + output) per UTC day; 0 stops all model calls'),
    paymentBudget: atomic.optional().describe("runtime_b: what its tool may pay in all, in atomic units of the chain's asset (USDG: 6 decimals)"),
  })
  .refine((body) => body.dailyTokens !== undefined || body.paymentBudget !== undefined, 'set dailyTokens, paymentBudget or both');
export const budgetSchema = z.object({
  dailyTokens: z.number().int(),
  usedToday: z.number().int(),
  resetsAt: z.string(),
  paymentBudget: z.string(),
  paymentSpent: z.string().describe('paid, or held for a payment whose outcome is not final'),
  wallet: z.object({ id: z.string(), address: z.string().nullable() }).nullable().describe("runtime_b's own wallet (fund it to let the agent pay)"),
});

export const toolPaymentBody = z.object({
  url: z.string().min(1).max(8192),
  method: z.enum(['GET', 'POST']).default('GET'),
  body: z.unknown().optional(),
  maxAmount: atomic.optional(),
  approvalId: z.uuid().optional(),
  turnId: z.uuid().optional(),
});
export type BudgetView = z.infer<typeof budgetSchema>;

export const sessionsSchema = z.array(sessionSummarySchema);
export const agentStateResult = listedAgentSchema;
export const renewResult = createAgentResult;
export const providerParams = agentIdParams.extend({ provider: z.enum(MODEL_PROVIDERS) });
export const agentPaymentsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  before: z.uuid().optional().describe('a payment id: list payments older than this one (the last of the previous page)'),
});
export const agentApprovalParams = agentIdParams.extend({ approvalId: z.string() });
export const approvalEventsBody = z
  .strictObject({
    projectId: z.uuid().describe('one of your projects'),
    queueId: z.uuid().describe("one of that project's event queues"),
  })
  .nullable()
  .describe('null: publish no more');
export const approvalEventsSchema = approvalQueueSchema;
export type ConfigView = z.infer<typeof runtimeConfigSchema>;
export const exportSchema = z.object({
  agent: listedAgentSchema,
  config: runtimeConfigSchema,
  sessions: z.array(z.object({ session: z.string(), updatedAt: z.string(), entries: z.array(z.record(z.string(), z.unknown())) })),
  exportedAt: z.string(),
});
export type AgentExport = z.infer<typeof exportSchema>;
export const usageSchema = z.object({
  tokens: z.object({ today: z.number().int(), total: z.number().int(), day: z.string().describe('the UTC day of `today`') }),
  payments: z.object({ count: z.number().int().describe('tool payments that settled'), spent: z.string().describe('atomic units they paid'), held: z.string().describe('held for payments whose outcome is not final') }),
});

// A mixed-case address must carry its EIP-55 checksum (a typo is caught, not paid); the zero address burns.
const payeeAddress = z
  .string()
  .refine((value) => isAddress(value, { strict: true }), 'must be an EVM address (0x and 40 hex digits; mixed case must match its EIP-55 checksum)')
  .refine((value) => !/^0x0{40}$/.test(value), 'must not be the zero address');
const positiveAtomic = z.string().regex(/^(?=\d{1,30}$)0*[1-9]\d*$/, 'must be a whole number of atomic units above 0, as a string');

export const withdrawBody = z.strictObject({
  to: payeeAddress,
  amount: positiveAtomic.describe("atomic units of the chain's asset (USDG: 6 decimals)"),
});

/** Bounds of a paid turn's token cap (PUT /agents/{agentId}/chat/price). */
export const PAID_CHAT_LIMITS = { minTokensPerTurn: 256, maxTokensPerTurn: 1_000_000, defaultTokensPerTurn: 16_000 } as const;

export const chatPriceBody = z.strictObject({
  pricePer1kTokens: positiveAtomic.describe("what 1,000 model tokens (input + output) cost, in atomic units of the chain's asset (USDG: 6 decimals)"),
  maxTokensPerTurn: z
    .number()
    .int()
    .min(PAID_CHAT_LIMITS.minTokensPerTurn)
    .max(PAID_CHAT_LIMITS.maxTokensPerTurn)
    .default(PAID_CHAT_LIMITS.defaultTokensPerTurn)
    .describe('the most tokens one paid turn may use: the upto maximum a buyer signs is their price'),
  payTo: payeeAddress.optional().describe("where payments go; default: a runtime_b agent's own wallet (a runtime_a agent must name one)"),
});
export const chatPriceSchema = z.object({
  pricePer1kTokens: z.string(),
  maxTokensPerTurn: z.number().int(),
  maximum: z.string().describe("what a buyer's upto permit must allow: pricePer1kTokens × maxTokensPerTurn / 1000, rounded up"),
  payTo: z.string(),
  network: z.string(),
  asset: z.string(),
  updatedAt: z.string(),
});
export type ChatPriceView = z.infer<typeof chatPriceSchema>;
export const paidChatBody = z.strictObject({
  messages: z.array(chatMessageSchema).min(1).max(CHAT_LIMITS.maxMessages).describe('the whole conversation: a paid turn reads no stored history'),
});
export const paidChatResult = chatResult.extend({
  usage: z.object({
    tokens: z.number().int().describe('model tokens (input + output) the turn used, as the provider reported them'),
    pricePer1kTokens: z.string().describe('the price the permit was signed at'),
    amount: z.string().describe('what was settled: tokens × price / 1000 rounded up, at most the maximum'),
    maximum: z.string(),
  }),
});
export type PaidChatResult = z.infer<typeof paidChatResult>;

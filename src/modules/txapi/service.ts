import type { Address } from 'viem';
import { caip2, findAsset } from '../../chain/registry.js';
import type { Db } from '../../platform/db.js';
import { badRequest, notFound } from '../../platform/http/errors.js';
import {
  ATTESTATION_PRIMARY_TYPE,
  attestationDomain,
  attestationTypes,
} from './attestation.js';
import { invalid, issue, parseAttestationChain, parseListQuery, resolveChain, type ListQuery } from './query.js';
import type { TransactionRecord } from './schemas.js';
import { TransactionStore, type PublishedRow } from './store.js';

export interface TokenFacts {
  symbol: string;
  decimals: number;
}

export interface TransactionServiceOptions {
  db: Db;
  /** The chain `chain` defaults to, and the chains a query may name. */
  primaryChainId: number;
  indexedChainIds: readonly number[];
  /** Address of the current attestation key (GET /x402scan/attestation). */
  signer: Address;
  /** Symbol and decimals of an indexed token; defaults to the chain registry. */
  tokenFacts?: (chainId: number, token: string) => TokenFacts;
}

/** The transaction API's rules: query resolution, publication-only reads, record shape. */
export class TransactionService {
  private readonly store: TransactionStore;
  private readonly chains: { primary: number; indexed: readonly number[] };
  private readonly tokenFacts: (chainId: number, token: string) => TokenFacts;

  constructor(private readonly options: TransactionServiceOptions) {
    this.store = new TransactionStore(options.db);
    this.chains = { primary: options.primaryChainId, indexed: options.indexedChainIds };
    this.tokenFacts = options.tokenFacts ?? registryTokenFacts;
  }

  async list(rawQuery: unknown): Promise<TransactionRecord[]> {
    const q = parseListQuery(rawQuery, this.chains);
    return (await this.rows(q)).map((row) => this.render(row));
  }

  private async rows(q: ListQuery): Promise<PublishedRow[]> {
    switch (q.mode) {
      case 'cursor':
        return this.store.afterSequence(q.chain, q.recipient, q.afterSequence, q.pageSize);
      case 'transaction': {
        // A transaction carries at most one settlement batch: filtered here rather than one statement per filter.
        const rows = (await this.store.inTransaction(q.transactionHash)).filter(
          (row) => (q.chain === 'all' || row.chainId === q.chain) && (q.recipient === null || row.recipient === q.recipient),
        );
        const offset = (q.page - 1) * q.pageSize;
        return rows.slice(offset, offset + q.pageSize);
      }
      case 'page': {
        if (q.before === null) return this.store.page(q.chain, q.recipient, (q.page - 1) * q.pageSize, q.pageSize);
        // The cursor must be a record of this very listing: a position in another order means nothing here.
        const position = await this.store.positionOf(q.before);
        if (!position || (q.chain !== 'all' && position.chainId !== q.chain) || (q.recipient !== null && position.recipient !== q.recipient)) {
          throw invalid([issue('before', 'before must be the paymentId of a published record of this listing (same chain and recipient)')]);
        }
        return this.store.after(q.chain, q.recipient, position, q.pageSize);
      }
    }
  }

  async get(paymentId: string): Promise<TransactionRecord> {
    if (!/^0x[0-9a-fA-F]{64}$/.test(paymentId)) {
      throw badRequest('Invalid paymentId: must be 0x and 64 hex digits', [{ in: 'params', path: '/paymentId', message: 'must be 0x and 64 hex digits' }]);
    }
    const row = await this.store.byPaymentId(paymentId.toLowerCase());
    if (!row) throw notFound(`No published transaction with paymentId ${paymentId}`);
    return this.render(row);
  }

  /** What a consumer needs to verify signatures on one chain, without reading prose. */
  attestationInfo(rawQuery: unknown) {
    const issues: Parameters<typeof resolveChain>[2] = [];
    const resolved = resolveChain(parseAttestationChain(rawQuery), this.chains, issues);
    if (resolved === 'all') issues.push({ in: 'querystring', path: '/chain', message: "chain must name one network, not 'all'" });
    if (issues.length) throw invalid(issues);
    return {
      domain: attestationDomain(resolved as number),
      types: { [ATTESTATION_PRIMARY_TYPE]: attestationTypes.PaymentAttestation.map((field) => ({ ...field })) },
      primaryType: ATTESTATION_PRIMARY_TYPE,
      signer: this.options.signer,
    };
  }

  private render(row: PublishedRow): TransactionRecord {
    const token = this.tokenFacts(row.chainId, row.token);
    return {
      from: row.payer,
      to: row.recipient,
      transactionHash: row.transactionHash,
      value: row.value,
      tokenAddress: row.token,
      tokenSymbol: token.symbol,
      tokenDecimals: token.decimals,
      logIndex: row.logIndex,
      authorizationId: row.authorizationNonce,
      blockTimestamp: row.blockTimestamp,
      blockNumber: String(row.blockNumber),
      facilitator: row.facilitator,
      chainId: row.chainId,
      attestation: {
        paymentId: row.paymentId,
        payer: row.payer,
        recipient: row.recipient,
        recipientSequence: String(row.recipientSequence),
        token: row.token,
        amount: row.value,
      },
      signature: row.signature,
      signer: row.signer,
    };
  }
}

function registryTokenFacts(chainId: number, token: string): TokenFacts {
  const asset = findAsset(caip2(chainId), token);
  return asset ? { symbol: asset.symbol, decimals: asset.decimals } : { symbol: 'UNKNOWN', decimals: 0 };
}

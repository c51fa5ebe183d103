import type { FastifyRequest } from 'fastify';
import { ApiError } from '../http/errors.js';
import type { KeyRotation } from '../key-rotation.js';
import { SECRET_PREFIXES } from '../secrets.js';
import type { IdentityVerifier } from './identity.js';
import type { CredentialKind, PrincipalOf } from './principal.js';

/** Looks a hashed secret up in the table of one credential kind; null when unknown, revoked or expired. */
export type SecretResolver<K extends CredentialKind> = (secretHash: string) => Promise<PrincipalOf<K> | null>;

type SecretKind = Exclude<CredentialKind, 'identity'>;
const PREFIX_OF: Record<SecretKind, string> = {
  mgmt: SECRET_PREFIXES.api,
  project_key: SECRET_PREFIXES.api,
  wallet: SECRET_PREFIXES.wallet,
  oauth: SECRET_PREFIXES.oauthAccess,
};

export interface GuardOptions {
  /** Error code for a 401 in families with string codes (payment intents use `project_unauthorized`). */
  code?: string;
}

/**
 * Resolves `Authorization: Bearer` to a principal of one of the kinds a route accepts. Both
 * `svc_api_` kinds (project keys and management credentials) are told apart by lookup: a route
 * asks only the tables of the kinds it accepts, so a credential of another kind is simply unknown.
 */
export class Authenticator {
  private readonly resolvers = new Map<SecretKind, SecretResolver<SecretKind>>();

  constructor(
    /** Looks a presented secret up under each form it may be stored in (a pepper rotation, legacy hashes). */
    private readonly secrets: Pick<KeyRotation, 'find'>,
    private readonly verifyIdentity: IdentityVerifier,
  ) {}

  register<K extends SecretKind>(kind: K, resolver: SecretResolver<K>): void {
    this.resolvers.set(kind, resolver as unknown as SecretResolver<SecretKind>);
  }

  async authenticate<K extends CredentialKind>(
    authorization: string | undefined,
    accepted: readonly K[],
    options: GuardOptions = {},
  ): Promise<PrincipalOf<K>> {
    const fail = () => new ApiError(401, options.code ?? 'unauthorized', 'Missing or invalid credentials');
    const match = /^Bearer ([\x21-\x7e]{1,4096})$/.exec(authorization?.trim() ?? '');
    if (!match) throw fail();
    const credential = match[1];

    const secretKinds = accepted.filter((kind): kind is K & SecretKind => kind !== 'identity');
    const candidates = secretKinds.filter((kind) => credential.startsWith(PREFIX_OF[kind]));
    if (candidates.length > 0) {
      for (const kind of candidates) {
        const resolve = this.resolvers.get(kind);
        const principal = resolve ? await this.secrets.find(credential, resolve) : null;
        if (principal?.kind === 'project_key' && principal.disabled) {
          // The spec's 403: the key is genuine, but its project or the key itself is switched off.
          throw new ApiError(403, 'project_disabled', 'The project or API key is disabled');
        }
        if (principal) return principal as PrincipalOf<K>;
      }
      throw fail();
    }
    if (accepted.includes('identity' as K) && !credential.startsWith('svc_')) {
      try {
        const { userId, claims } = await this.verifyIdentity(credential);
        return { kind: 'identity', userId, claims } as PrincipalOf<K>;
      } catch {
        throw fail();
      }
    }
    throw fail();
  }

  /** An onRequest hook (the credential is checked before the body is even read) that admits only the given kinds and sets `request.principal`. */
  guard<K extends CredentialKind>(accepted: readonly K[], options: GuardOptions = {}) {
    return async (request: FastifyRequest) => {
      request.principal = await this.authenticate(request.headers.authorization, accepted, options);
    };
  }
}

/** The principal a guarded route was admitted with, narrowed to the kinds its guard accepts. */
export function principalOf<K extends CredentialKind>(request: FastifyRequest, ...kinds: K[]): PrincipalOf<K> {
  const principal = request.principal;
  if (!principal || !kinds.includes(principal.kind as K)) {
    throw new Error(`route reached without a ${kinds.join('/')} principal: is its guard missing?`);
  }
  return principal as PrincipalOf<K>;
}

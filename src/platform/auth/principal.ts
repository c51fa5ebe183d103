import type { JWTPayload } from 'jose';

/** Who a request acts as, one shape per credential kind of the spec's Authentication table. */
export type Principal =
  | { kind: 'identity'; userId: string; claims: JWTPayload }
  | { kind: 'mgmt'; credentialId: string }
  | { kind: 'project_key'; projectId: string; keyId: string; disabled: boolean }
  | { kind: 'wallet'; walletId: string; credentialId: string }
  /**
   * An OAuth access token (src/modules/oauth), accepted by /mcp only: a user's grant of one wallet to one client, paying
   * under the grant's own wallet credential and at most `ceiling` in all.
   */
  | { kind: 'oauth'; walletId: string; credentialId: string; grantId: string; clientId: string; ceiling: { network: string; asset: string; amount: string } };

export type CredentialKind = Principal['kind'];
export type PrincipalOf<K extends CredentialKind> = Extract<Principal, { kind: K }>;

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

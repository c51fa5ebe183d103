import type { JWTPayload } from 'jose';

/** Who a request acts as, one shape per credential kind of the spec's Authentication table. */
export type Principal =
  | { kind: 'identity'; userId: string; claims: JWTPayload }
  | { kind: 'mgmt'; credentialId: string }
  | { kind: 'project_key'; projectId: string; keyId: string; disabled: boolean }
  | { kind: 'wallet'; walletId: string; credentialId: string };

export type CredentialKind = Principal['kind'];
export type PrincipalOf<K extends CredentialKind> = Extract<Principal, { kind: K }>;

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
}

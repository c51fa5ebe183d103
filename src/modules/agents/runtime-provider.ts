import type { AgentType } from './tables.js';

/** What one agent's runtime gets. `volumeRef` names an existing volume to adopt (a redeploy), else null. */
export interface RuntimeSpec {
  agentId: string;
  instanceId: string;
  appName: string;
  type: AgentType;
  cpus: number;
  memoryMb: number;
  volumeSizeGb: number;
  volumeRef: string | null;
  /** The agent's daily model-token budget, enforced by the runtime in front of every model call. */
  dailyTokenBudget: number;
  /** The api origin, where a runtime_b runtime sends its tool's payments (with its own token). */
  serviceUrl: string;
}

/** A started runtime: where it answers, the token it accepts (new at every start), and the provider's handles. */
export interface DeployedRuntime {
  url: string;
  token: string;
  volumeRef: string;
  machineRef: string | null;
}

/** The provider's handles on an instance (as stored in agent_instances). */
export interface InstanceRef {
  agentId: string;
  appName: string;
  volumeRef: string;
  machineRef: string | null;
}

/** deploy() was given a volume that is gone: the runtime is not started on an empty one. */
export class VolumeLostError extends Error {}

/**
 * Where agent runtimes run. The local provider runs each as a process on this machine; a hosting adapter
 * (Fly Machines API shape) implements the same calls. deploy() adopts `volumeRef` when given: a redeploy
 * never replaces a volume with an empty one (VolumeLostError). Whether a runtime answers is the supervisor's
 * authenticated probe, not the provider's word.
 */
export interface RuntimeProvider {
  readonly name: string;
  deploy(spec: RuntimeSpec): Promise<DeployedRuntime>;
  stop(instance: InstanceRef): Promise<void>;
  /** Deletes the volume: the runtime's data is gone. */
  remove(instance: InstanceRef): Promise<void>;
  close(): Promise<void>;
}

/** What each runtime gets (recorded on the instance): one CPU, 512 MB of memory, a 1 GB volume. */
export const RUNTIME_RESOURCES = { cpus: 1, memoryMb: 512, volumeSizeGb: 1 } as const;

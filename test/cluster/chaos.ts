// The chaos loop: every 3–6 s (seeded) a random node that is up is kill -9'd with its children and
// restarted at once on the same configuration, as a supervisor would. It does not wait for the restart
// to be ready before the next kill: a node still starting is simply not a candidate, and neither is the
// last node of its role that is up. A start takes seconds (tens on a loaded 2-core machine), so without
// that rule the cluster would spend the run with every node down, and the load would measure nothing.
import { counts, sleep } from './client.js';
import type { Cluster, ClusterNode } from './topology.js';

export interface Chaos {
  /** Stops killing and waits until every node is up again. */
  stop(): Promise<void>;
  /** What happened, for the timeline. */
  log: string[];
}

export function startChaos(cluster: Cluster, random: () => number, mark: (line: string) => void): Chaos {
  let stopping = false;
  let wake: () => void = () => {};
  const restarts: Promise<void>[] = [];
  const log: string[] = [];
  const restart = async (node: ClusterNode) => {
    // A start that fails (it happens: a port not yet released, the database busy) is tried again.
    for (let attempt = 1; ; attempt++) {
      try {
        await cluster.launch(node);
        node.restarts += 1;
        counts.restarts += 1;
        mark(`${node.name} up again`);
        return;
      } catch (error) {
        mark(`${node.name} restart ${attempt} failed: ${String(error).slice(0, 300)}`);
        if (attempt >= 5) throw error;
        await sleep(500);
      }
    }
  };
  const loop = (async () => {
    while (!stopping) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 3_000 + random() * 3_000);
        wake = () => (clearTimeout(timer), resolve());
      });
      if (stopping) break;
      const candidates = cluster.nodes.filter((n) => n.state === 'up' && cluster.up(n.role).length > 1);
      if (candidates.length === 0) continue;
      const victim = candidates[Math.floor(random() * candidates.length)]!;
      await cluster.kill(victim);
      counts.kills += 1;
      log.push(victim.name);
      mark(`killed ${victim.name} (down: ${cluster.nodes.filter((n) => n.state !== 'up').map((n) => n.name).join(', ')})`);
      restarts.push(restart(victim));
    }
  })();
  return {
    log,
    async stop() {
      stopping = true;
      wake();
      await loop;
      await Promise.all(restarts);
    },
  };
}

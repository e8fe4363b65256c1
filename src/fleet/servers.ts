// The servers of the fleet as this one knows them (CONTRACT §12): the hosting profile each wrote
// into the store, which the accounts placed on it take, and the choice of a server for a new
// account.
import type { Config } from '../config/index.ts';
import { invalid, nodeUnavailable } from '../core/errors.ts';
import type { Store } from '../store/open.ts';
import type { Db } from '../store/schema.ts';
import { accountsHeld, type HostingProfile, type Server, serversWithState } from '../store/servers.ts';
import type { FleetDeps } from './context.ts';

/** The hosting side of this server's configuration, which accounts placed on it take. */
export function profileOf(config: Config): HostingProfile {
  return {
    sharedIpv4: config.sharedIpv4,
    sharedIpv6: config.sharedIpv6,
    shell: config.shell,
    homeBase: config.homeBase,
    nameservers: [...config.nameservers],
    hostName: config.hostName,
    ipPool: {
      ipv4: [...config.ipPool.ipv4],
      ipv6: [...config.ipPool.ipv6],
      resellerShare: config.ipPool.resellerShare,
    },
  };
}

export class FleetServers {
  readonly self: string;
  readonly #config: Config;
  readonly #store: Store;
  readonly #own: HostingProfile;
  #profiles = new Map<string, HostingProfile>();

  constructor({ config, store }: Pick<FleetDeps, 'config' | 'store'>) {
    this.#config = config;
    this.#store = store;
    this.self = config.nodeName;
    this.#own = profileOf(config);
  }

  /** What accounts on `server` take from its configuration: its shared addresses, its shell. */
  hosting(server: string | null): HostingProfile {
    if (server === null || server === this.self) return this.#own;
    return this.#profiles.get(server) ?? this.#own;
  }

  /** Reads the other servers' profiles again (at start, with each heartbeat, when placing). */
  async refresh(): Promise<void> {
    this.#remember(await serversWithState(this.#store.db, Date.now()));
  }

  #remember(servers: readonly Server[]): void {
    const profiles = new Map<string, HostingProfile>();
    for (const server of servers) if (server.profile) profiles.set(server.name, server.profile);
    this.#profiles = profiles;
  }

  /**
   * The server a new account goes to: the one asked for (it must be up and not draining), else the
   * up, non-draining server with the fewest accounts for its weight; this server when the fleet
   * has no other. Runs under createacct's lock, so that counts do not move meanwhile.
   */
  async place(db: Db, requested: string | undefined): Promise<{ server: string; profile: HostingProfile }> {
    const servers = await serversWithState(db, Date.now());
    this.#remember(servers);
    const profile = (name: string) => this.hosting(name);
    const candidates = servers.map((server) => ({
      name: server.name,
      weight: server.weight,
      // This server is up while it runs this call, whatever its last heartbeat says.
      state: server.name === this.self && server.state === 'down' ? 'up' : server.state,
    }));
    if (!candidates.some((candidate) => candidate.name === this.self))
      candidates.push({ name: this.self, weight: this.#config.nodeWeight, state: 'up' });
    if (requested !== undefined) {
      const server = candidates.find((candidate) => candidate.name === requested);
      if (!server) throw invalid('server', `there is no server named ${requested} (berth nodes lists them)`);
      if (server.state !== 'up')
        throw invalid('server', `the server ${requested} is ${server.state} and takes no new account`);
      return { server: requested, profile: profile(requested) };
    }
    const open = candidates.filter((candidate) => candidate.state === 'up');
    if (open.length === 0) throw nodeUnavailable({ server: this.self });
    if (open.length === 1) return { server: open[0]!.name, profile: profile(open[0]!.name) };
    // Counted only when there is a choice: a single server never pays for it.
    const held = await accountsHeld(db);
    const load = (candidate: (typeof open)[number]) =>
      (held.get(candidate.name) ?? 0) / Math.max(1, candidate.weight);
    open.sort((a, b) => load(a) - load(b) || a.name.localeCompare(b.name));
    return { server: open[0]!.name, profile: profile(open[0]!.name) };
  }
}

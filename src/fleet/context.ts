// What the parts of the fleet work with (servers.ts, calls.ts, forwarding.ts, moves.ts, and
// fleet.ts, which puts them together): the services this server runs with.
import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';
import type { Driver } from '../provision/driver.ts';
import type { Journal } from '../provision/journal.ts';
import type { Store } from '../store/open.ts';

export interface FleetDeps {
  config: Config;
  store: Store;
  driver: Driver;
  journal: Journal;
  log: Logger;
}

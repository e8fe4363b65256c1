// The `record` driver: Berth keeps the accounts' state and touches nothing on the system. The
// default, for billing integration tests, demonstrations and servers provisioned by other means.
import type { Driver } from '../driver.ts';

export function recordDriver(): Driver {
  const none = () => [];
  return {
    name: 'record',
    nameTaken: async () => false,
    createAccount: none,
    removeAccount: none,
    suspendAccount: none,
    unsuspendAccount: none,
    changePassword: none,
    changeLimits: none,
    changeObjects: none,
    // An account moves by its record alone: there is nothing else to take along.
    exportAccount: async () => null,
    accountFiles() {
      throw new Error('the record driver keeps no files for an account');
    },
    receiveAccount: none,
    // The store is all there is: nothing on the system to repair, compare with or measure.
    reconcile: async () => {},
    purge: async () => {},
    inspect: async () => [],
    measureUsage: async () => new Map(),
    close: async () => {},
  };
}

// The `record` driver: Berth keeps the accounts' state and touches nothing on the system. The
// default, for billing integration tests, demonstrations and servers provisioned by other means.
import type { Driver } from '../driver.ts';

export function recordDriver(): Driver {
  const none = () => [];
  return {
    name: 'record',
    createAccount: none,
    removeAccount: none,
    suspendAccount: none,
    unsuspendAccount: none,
    changePassword: none,
    changeLimits: none,
    close: async () => {},
  };
}

// Types of the Berth client (index.js).
import type {
  HolderOperationName,
  HolderOperationParams,
  HolderOperationResults,
  OperationName,
  OperationParams,
  OperationResults,
} from './operations.js';

export type * from './operations.js';

export interface BerthClientOptions {
  /** The admin listener (https://panel.example.net:5555) or the reseller listener. */
  url: string;
  user: string;
  password: string;
  /** Credentials as X-API-* headers (default) or as apiuser/apiauth form fields. */
  style?: 'header' | 'form';
  /** Act as this reseller on every call (X-RESELLER). */
  reseller?: string;
  /** Per call, in milliseconds; default 30,000. */
  timeoutMs?: number;
  /** How often a call safe to repeat (a read, or a change with an idempotency key) is retried; default 2. */
  retries?: number;
  /** The certificate to trust, e.g. the server's self-signed tls/cert.pem. */
  ca?: string | Uint8Array;
  rejectUnauthorized?: boolean;
  servername?: string;
}

export interface CallOptions {
  /** Makes a state-changing call safe to retry: the same key within 24 hours replays the first answer. */
  idempotencyKey?: string;
  reseller?: string;
  timeoutMs?: number;
}

/** Berth refused or failed the call; `code` is the error code of docs/errors.md. */
export class BerthError extends Error {
  readonly status: number;
  readonly code: string;
  readonly param: string | undefined;
  /** Seconds, from Retry-After, on a 429. */
  retryAfter: number | undefined;
}

export class BerthClient {
  constructor(options: BerthClientOptions);
  /** Resolves with the answer's `data` (the bare answer for the credential check ''). */
  call<O extends OperationName>(
    operation: O,
    params?: OperationParams[O],
    options?: CallOptions,
  ): Promise<OperationResults[O]>;
  /** An account holder's operation, for the holder of `user` (an account in the caller's scope). */
  callForHolder<O extends HolderOperationName>(
    user: string,
    operation: O,
    params?: HolderOperationParams[O],
    options?: CallOptions,
  ): Promise<HolderOperationResults[O]>;
}

export type BerthHolderClientOptions = {
  /** The customer listener (https://panel.example.net:2083). */
  url: string;
  timeoutMs?: number;
  retries?: number;
  ca?: string | Uint8Array;
  rejectUnauthorized?: boolean;
  servername?: string;
} & (
  | { user: string; password: string; token?: undefined }
  | { token: string; user?: undefined; password?: undefined }
);

export interface HolderCallOptions {
  idempotencyKey?: string;
  timeoutMs?: number;
}

/** An account's holder on the customer listener, with the account's password or an API token. */
export class BerthHolderClient {
  constructor(options: BerthHolderClientOptions);
  call<O extends HolderOperationName>(
    operation: O,
    params?: HolderOperationParams[O],
    options?: HolderCallOptions,
  ): Promise<HolderOperationResults[O]>;
}

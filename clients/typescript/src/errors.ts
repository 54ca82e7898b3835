/**
 * Errors thrown by the client, one class per stable error code of Spool's API.
 *
 * The server answers every error as `{"error": {"code", "message"}}`; the class
 * is chosen by the code, so callers can write `if (e instanceof LeaseLost)`.
 * A code this version does not know still throws `SpoolError` with the code
 * kept. Failing to reach the server at all throws `ConnectionFailed`.
 */

export class SpoolError extends Error {
  /** The stable code, e.g. `not_found`. */
  readonly code: string;
  /** The HTTP status, when the server answered. */
  readonly status: number | undefined;

  constructor(message: string, code = "unknown", status?: number, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
  }
}

/** The class of one stable code: `LeaseLost.code` is `"lease_lost"`, as is its errors' `code`. */
export interface CodedError<C extends string = string> {
  new (message: string, status?: number): SpoolError & { readonly code: C };
  readonly code: C;
}

// Typed as `CodedError` so that the declarations name it, rather than spell
// out `Error`'s static side (which needs Node's types to compile), and so
// that each class's `code` is its own literal: the classes differ in type, and
// `instanceof` narrows one from another.
function coded<C extends string>(code: C): CodedError<C> {
  return class extends SpoolError {
    static readonly code = code;
    declare readonly code: C;
    constructor(message: string, status?: number) {
      super(message, code, status);
    }
  };
}

export class BadRequest extends coded("bad_request") {}
export class Unauthorized extends coded("unauthorized") {}
export class NotFound extends coded("not_found") {}
export class MethodNotAllowed extends coded("method_not_allowed") {}
export class RequestTimeout extends coded("request_timeout") {}
/** The lease token is not the task's current one: the lease expired or moved on. */
export class LeaseLost extends coded("lease_lost") {}
/** The task is leased, so it cannot be changed. */
export class LeaseHeld extends coded("lease_held") {}
export class PayloadTooLarge extends coded("payload_too_large") {}
export class UnsupportedMediaType extends coded("unsupported_media_type") {}
export class Overloaded extends coded("overloaded") {}
export class HeadersTooLarge extends coded("headers_too_large") {}
export class Internal extends coded("internal") {}
/** The server's store is down; the server reconnects by itself. */
export class Unavailable extends coded("unavailable") {}
/** The server could not be reached, or did not answer in time. */
export class ConnectionFailed extends coded("connection_failed") {}

const byCode = new Map<string, CodedError>(
  [
    BadRequest,
    Unauthorized,
    NotFound,
    MethodNotAllowed,
    RequestTimeout,
    LeaseLost,
    LeaseHeld,
    PayloadTooLarge,
    UnsupportedMediaType,
    Overloaded,
    HeadersTooLarge,
    Internal,
    Unavailable,
  ].map((cls) => [cls.code, cls]),
);

/** The error for an error answer: its code's class, or SpoolError for a new code. */
export function errorFor(code: string, message: string, status: number): SpoolError {
  const cls = byCode.get(code);
  return cls ? new cls(message, status) : new SpoolError(message, code, status);
}

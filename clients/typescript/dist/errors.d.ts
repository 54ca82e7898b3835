/**
 * Errors thrown by the client, one class per stable error code of Spool's API.
 *
 * The server answers every error as `{"error": {"code", "message"}}`; the class
 * is chosen by the code, so callers can write `if (e instanceof LeaseLost)`.
 * A code this version does not know still throws `SpoolError` with the code
 * kept. Failing to reach the server at all throws `ConnectionFailed`.
 */
export declare class SpoolError extends Error {
    /** The stable code, e.g. `not_found`. */
    readonly code: string;
    /** The HTTP status, when the server answered. */
    readonly status: number | undefined;
    constructor(message: string, code?: string, status?: number, options?: {
        cause?: unknown;
    });
}
/** The class of one stable code: `LeaseLost.code` is `"lease_lost"`, as is its errors' `code`. */
export interface CodedError<C extends string = string> {
    new (message: string, status?: number): SpoolError & {
        readonly code: C;
    };
    readonly code: C;
}
declare const BadRequest_base: CodedError<"bad_request">;
export declare class BadRequest extends BadRequest_base {
}
declare const Unauthorized_base: CodedError<"unauthorized">;
export declare class Unauthorized extends Unauthorized_base {
}
declare const NotFound_base: CodedError<"not_found">;
export declare class NotFound extends NotFound_base {
}
declare const MethodNotAllowed_base: CodedError<"method_not_allowed">;
export declare class MethodNotAllowed extends MethodNotAllowed_base {
}
declare const RequestTimeout_base: CodedError<"request_timeout">;
export declare class RequestTimeout extends RequestTimeout_base {
}
declare const LeaseLost_base: CodedError<"lease_lost">;
/** The lease token is not the task's current one: the lease expired or moved on. */
export declare class LeaseLost extends LeaseLost_base {
}
declare const LeaseHeld_base: CodedError<"lease_held">;
/** The task is leased, so it cannot be changed. */
export declare class LeaseHeld extends LeaseHeld_base {
}
declare const PayloadTooLarge_base: CodedError<"payload_too_large">;
export declare class PayloadTooLarge extends PayloadTooLarge_base {
}
declare const UnsupportedMediaType_base: CodedError<"unsupported_media_type">;
export declare class UnsupportedMediaType extends UnsupportedMediaType_base {
}
declare const Overloaded_base: CodedError<"overloaded">;
export declare class Overloaded extends Overloaded_base {
}
declare const HeadersTooLarge_base: CodedError<"headers_too_large">;
export declare class HeadersTooLarge extends HeadersTooLarge_base {
}
declare const Internal_base: CodedError<"internal">;
export declare class Internal extends Internal_base {
}
declare const Unavailable_base: CodedError<"unavailable">;
/** The server's store is down; the server reconnects by itself. */
export declare class Unavailable extends Unavailable_base {
}
declare const ConnectionFailed_base: CodedError<"connection_failed">;
/** The server could not be reached, or did not answer in time. */
export declare class ConnectionFailed extends ConnectionFailed_base {
}
/** The error for an error answer: its code's class, or SpoolError for a new code. */
export declare function errorFor(code: string, message: string, status: number): SpoolError;
export {};

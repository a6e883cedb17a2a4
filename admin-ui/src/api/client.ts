// The one typed API client: openapi-fetch over the types generated from the served OpenAPI document.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];

/** An API refusal or failure, as the contract shapes it: a stable code, a sentence, and the request id. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
    readonly details: unknown = null,
    /** Seconds the server asks to wait before trying again (Retry-After on a 429 or 503), when it said. */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

let tenant: string | null = null;
let onSessionLost: (() => void) | null = null;

/** The tenant a platform admin is looking at (sent as X-Tenant); null for a tenant's own users. */
export function setTenant(slug: string | null): void {
  tenant = slug;
}

export function currentTenant(): string | null {
  return tenant;
}

/** Called when the server says the session is gone (401 on a request that had one). */
export function setSessionLostHandler(handler: (() => void) | null): void {
  onSessionLost = handler;
}

function csrfToken(): string | null {
  const match = document.cookie.split("; ").find((c) => c.startsWith("skiplock_csrf="));
  return match ? decodeURIComponent(match.slice("skiplock_csrf=".length)) : null;
}

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** Marks the console's requests: their 401s carry no Basic challenge, which would open the browser's own dialog. */
const MARK = { "X-Requested-With": "skiplock-console" };

const session: Middleware = {
  onRequest({ request }) {
    request.headers.set("X-Requested-With", MARK["X-Requested-With"]);
    if (UNSAFE.has(request.method)) {
      const token = csrfToken();
      if (token) request.headers.set("X-CSRF-Token", token);
    }
    if (tenant && !request.headers.has("X-Tenant")) request.headers.set("X-Tenant", tenant);
    return request;
  },
  async onResponse({ request, response }) {
    if (response.status === 401 && !request.url.endsWith("/api/auth/session")) onSessionLost?.();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: window.location.origin });
api.use(session);

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The body of a successful answer, or an ApiError carrying the contract's code and the request id. */
export async function unwrap<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (response.ok) return data as T;
  throw toError(response, error);
}

export function toError(response: Response, body: unknown): ApiError {
  const shaped = (body ?? {}) as { code?: string; error?: string; details?: unknown };
  return new ApiError(
    response.status,
    shaped.code ?? "unavailable",
    shaped.error ?? `The server answered ${response.status}`,
    response.headers.get("x-request-id"),
    shaped.details ?? null,
    retryAfterSeconds(response.headers.get("retry-after")),
  );
}

/** Retry-After in seconds (the API sends seconds; an HTTP date is read too). */
function retryAfterSeconds(header: string | null): number | null {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** Log in: Basic credentials once, for a session cookie. */
export async function login(username: string, password: string): Promise<void> {
  const response = await fetch("/api/auth/session", {
    method: "POST",
    headers: {
      ...MARK,
      Authorization: `Basic ${btoa(unescape(encodeURIComponent(`${username}:${password}`)))}`,
    },
    credentials: "same-origin",
  });
  if (!response.ok) throw toError(response, await response.json().catch(() => null));
}

export async function logout(): Promise<void> {
  await unwrap(api.DELETE("/api/auth/session"));
}

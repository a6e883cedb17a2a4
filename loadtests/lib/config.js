// Settings of every load test, from the environment (k6 run -e NAME=value, or exported variables):
//   SKIPLOCK_URL             the server (default http://127.0.0.1:8080)
//   SKIPLOCK_ADMIN_USER      a platform admin, who creates the test's tenant and users (default admin)
//   SKIPLOCK_ADMIN_PASSWORD  its password (default the local default, skiplock-admin)
//   SKIPLOCK_GRPC_ADDRESS    queue-ti's gRPC service, host:port (default SKIPLOCK_URL's host, port 50051): grpc.js
//   RATE, DURATION, ...      each script's own knobs, read with number() / text() below
export const BASE_URL = (__ENV.SKIPLOCK_URL || "http://127.0.0.1:8080").replace(/\/$/, "");
export const ADMIN_USER = __ENV.SKIPLOCK_ADMIN_USER || "admin";
export const ADMIN_PASSWORD = __ENV.SKIPLOCK_ADMIN_PASSWORD || "skiplock-admin";
const HOST = BASE_URL.replace(/^[a-z]+:\/\//, "")
  .replace(/\/.*$/, "")
  .replace(/:\d+$/, "");
export const GRPC_ADDRESS = __ENV.SKIPLOCK_GRPC_ADDRESS || `${HOST}:50051`;

/** A numeric knob: `RATE=200` or the default. */
export function number(name, fallback) {
  const raw = __ENV[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`${name}=${raw} is not a number`);
  return value;
}

/** A text knob: `DURATION=30s` or the default. */
export function text(name, fallback) {
  const raw = __ENV[name];
  return raw === undefined || raw === "" ? fallback : raw;
}

/** Distinct names for this run's tenant, users and topics, so that runs never share state. */
export function runId() {
  return `lt-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
}

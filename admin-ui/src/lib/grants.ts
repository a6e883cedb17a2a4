// What the signed-in user may do, by the contract's rules, so the console hides what it may not.
import type { Schemas } from "../api/client";

export type Me = Schemas["MeView"];
export type Action = "produce" | "consume" | "read";

/** `*` = every topic, `orders.*` = `orders` and every topic starting `orders.`, else exact; a grant on
 * `orders` also covers `orders.dlq`. */
export function patternCovers(pattern: string, topic: string): boolean {
  const base = topic.endsWith(".dlq") ? topic.slice(0, -4) : topic;
  const matches = (name: string) =>
    pattern === "*" ||
    pattern === name ||
    (pattern.endsWith(".*") && (name === pattern.slice(0, -2) || name.startsWith(pattern.slice(0, -1))));
  return matches(topic) || matches(base);
}

export function isAdmin(me: Me): boolean {
  return me.role === "platform_admin" || me.role === "tenant_admin";
}

export function can(me: Me, action: Action, topic: string): boolean {
  return (
    isAdmin(me) || (me.grants ?? []).some((g) => g.action === action && patternCovers(g.topic_pattern, topic))
  );
}

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

/** Whether `me` holds a grant for `action` on `topic` (for `consume`, see also `canConsumeAs`). */
export function can(me: Me, action: Action, topic: string): boolean {
  return (
    isAdmin(me) || (me.grants ?? []).some((g) => g.action === action && patternCovers(g.topic_pattern, topic))
  );
}

/** The consumer groups `me` may consume `topic` as, by the contract's rule: where every consume grant covering the
 * topic pins a group, only those; null when any group, or none, will do (an admin, or one of those grants pins
 * none). Empty: no consume grant covers the topic. */
export function consumeGroups(me: Me, topic: string): string[] | null {
  if (isAdmin(me)) return null;
  const pinned = new Set<string>();
  for (const g of me.grants ?? []) {
    if (g.action !== "consume" || !patternCovers(g.topic_pattern, topic)) continue;
    if (!g.consumer_group) return null;
    pinned.add(g.consumer_group);
  }
  return [...pinned];
}

/** Whether `me` may consume (retry, requeue) messages of `topic` that belong to `group`: a dead letter's own
 * consumer group, or the one a page's list is filtered by (null: none). A grant pinned to a group allows only that
 * group's dead letters, as the API checks (403 forbidden otherwise). */
export function canConsumeAs(me: Me, topic: string, group: string | null | undefined): boolean {
  if (!can(me, "consume", topic)) return false;
  const groups = consumeGroups(me, topic);
  return groups === null || (group != null && groups.includes(group));
}

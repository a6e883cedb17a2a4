// A page for some roles only: opened by URL by anyone else, it says so instead of showing forms that would be
// refused (under a 403 banner) one request at a time.
import type { ReactNode } from "react";
import { useMe } from "../api/session";
import { isAdmin, type Me } from "../lib/grants";
import { Empty } from "./ui";

export const tenantAdmins = { allowed: isAdmin, who: "tenant admins and platform admins" };
export const platformAdmins = { allowed: (me: Me) => me.role === "platform_admin", who: "platform admins" };

export function RequireRole({
  role,
  title,
  children,
}: {
  role: { allowed: (me: Me) => boolean; who: string };
  title: string;
  children: ReactNode;
}) {
  const me = useMe().data;
  if (!me) return null;
  if (role.allowed(me)) return children;
  return (
    <section>
      <h1>{title}</h1>
      <Empty title="Not available to this account">
        This page is for {role.who}; {me.username} is {me.role.replace("_", " ")}.
      </Empty>
    </section>
  );
}

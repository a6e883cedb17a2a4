// The frame of every page: navigation by role, the tenant switcher, live refresh, shortcuts, sign-in handling.
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, Outlet, useLocation, useNavigate } from "@tanstack/react-router";
import { useEffect, useRef, useState } from "react";
import { ApiError, currentTenant, logout, setSessionLostHandler, setTenant } from "../api/client";
import { keys } from "../api/keys";
import { useMe } from "../api/session";
import { tenantSwitcherQuery } from "../api/tenants";
import { isAdmin } from "../lib/grants";
import { REFRESH_CHOICES, storedTenant, storeTenant, useRefreshSeconds } from "../lib/settings";
import { ErrorNote } from "./ui";

export function Shell() {
  const location = useLocation();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const me = useMe();
  const onLogin = location.pathname === "/login";

  useEffect(() => {
    setSessionLostHandler(() => {
      if (window.location.pathname === "/login") return;
      const here = window.location.pathname + window.location.search;
      // Only a session this page had can expire: a first visit has none, and is simply asked to sign in.
      const hadSession = queryClient.getQueryData(keys.me()) !== undefined;
      queryClient.clear();
      navigate({ to: "/login", search: { redirect: here, expired: hadSession ? true : undefined } });
    });
    return () => setSessionLostHandler(null);
  }, [navigate, queryClient]);

  const signedOut = me.error instanceof ApiError && me.error.status === 401;
  useEffect(() => {
    if (signedOut && !onLogin) {
      navigate({ to: "/login", search: { redirect: location.pathname + location.searchStr } });
    }
  }, [signedOut, onLogin, navigate, location.pathname, location.searchStr]);

  if (onLogin) return <Outlet />;
  if (me.isPending || signedOut) return <div className="loading">Loading…</div>;
  if (me.error) return <ErrorNote error={me.error} title="Cannot reach Skiplock" />;
  return <Frame />;
}

function Frame() {
  const me = useMe().data;
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [help, setHelp] = useState(false);
  const platform = me?.role === "platform_admin";
  const [tenant, chooseTenant] = useState<string | null>(() => {
    const slug = platform ? storedTenant() : null;
    setTenant(slug);
    return slug;
  });

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName)))
        return;
      if (e.key === "/") {
        const search = document.getElementById("search");
        if (search) {
          e.preventDefault();
          search.focus();
        }
      } else if (e.key === "?") setHelp((h) => !h);
      else if (e.key === "r" && !e.ctrlKey && !e.metaKey) queryClient.invalidateQueries();
      else if (e.key === "Escape") setHelp(false);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [queryClient]);

  if (!me) return null;
  const switchTenant = (slug: string | null) => {
    setTenant(slug);
    storeTenant(slug);
    chooseTenant(slug);
    navigate({ to: "/" });
  };
  const signOut = async () => {
    await logout().catch(() => undefined);
    queryClient.clear();
    navigate({ to: "/login", search: {} });
  };
  const scoped = !platform || tenant !== null;
  return (
    <div className="app">
      <header className="top">
        <Link to="/" className="brand">
          Skiplock
        </Link>
        <nav aria-label="Main">
          {scoped && <Link to="/">Topics</Link>}
          {scoped && <Link to="/schedules">Schedules</Link>}
          {scoped && isAdmin(me) && <Link to="/users">Users</Link>}
          {isAdmin(me) && <Link to="/audit">Audit</Link>}
          {platform && <Link to="/tenants">Tenants</Link>}
          {platform && <Link to="/maintenance">Maintenance</Link>}
        </nav>
        <div className="tools">
          {platform && <TenantSwitcher value={tenant} onChange={switchTenant} />}
          <RefreshControl />
          <button
            type="button"
            className="link"
            onClick={() => setHelp(true)}
            aria-label="Keyboard shortcuts"
          >
            ?
          </button>
          <span className="who" title={me.role}>
            {me.username}
          </span>
          <button type="button" onClick={signOut}>
            Log out
          </button>
        </div>
      </header>
      <main key={currentTenant() ?? "-"}>{scoped ? <Outlet /> : <PlatformHome />}</main>
      {help && <ShortcutsHelp onClose={() => setHelp(false)} />}
    </div>
  );
}

function PlatformHome() {
  const path = useLocation().pathname;
  if (path === "/tenants" || path === "/maintenance") return <Outlet />;
  return (
    <section className="empty">
      <h1>Choose a tenant</h1>
      <p className="muted">
        Topics, messages and users belong to a tenant: pick one in the header, or manage{" "}
        <Link to="/tenants">tenants</Link> and <Link to="/maintenance">maintenance</Link>.
      </p>
    </section>
  );
}

function TenantSwitcher({
  value,
  onChange,
}: {
  value: string | null;
  onChange: (slug: string | null) => void;
}) {
  const tenants = useQuery(tenantSwitcherQuery());
  return (
    <label className="inline">
      <span className="sr-only">Tenant</span>
      <select value={value ?? ""} onChange={(e) => onChange(e.target.value || null)} aria-label="Tenant">
        <option value="">All tenants (platform)</option>
        {(tenants.data?.items ?? []).map((t) => (
          <option key={t.slug} value={t.slug}>
            {t.name} ({t.slug})
          </option>
        ))}
      </select>
    </label>
  );
}

function RefreshControl() {
  const [seconds, setSeconds] = useRefreshSeconds();
  return (
    <label className="inline">
      <span className="sr-only">Live refresh</span>
      <select value={seconds} onChange={(e) => setSeconds(Number(e.target.value))} aria-label="Live refresh">
        {REFRESH_CHOICES.map((s) => (
          <option key={s} value={s}>
            {s === 0 ? "Live: paused" : `Live: every ${s}s`}
          </option>
        ))}
      </select>
    </label>
  );
}

function ShortcutsHelp({ onClose }: { onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    ref.current?.showModal?.();
  }, []);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby="shortcuts-title" onClose={onClose}>
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <dl className="shortcuts">
        <dt>
          <kbd>/</kbd>
        </dt>
        <dd>Search or filter the page</dd>
        <dt>
          <kbd>r</kbd>
        </dt>
        <dd>Refresh now</dd>
        <dt>
          <kbd>?</kbd>
        </dt>
        <dd>This help</dd>
        <dt>
          <kbd>Esc</kbd>
        </dt>
        <dd>Close a dialog or drawer</dd>
      </dl>
      <div className="row end">
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
    </dialog>
  );
}

// Seeds a tenant for the run and removes it afterwards (the returned function is Playwright's teardown).
import { dropSeed, makeSeed } from "./seed";

export default async function globalSetup(): Promise<() => Promise<void>> {
  const s = await makeSeed();
  process.env.SKIPLOCK_E2E_SEED = JSON.stringify(s);
  return () => dropSeed(s);
}

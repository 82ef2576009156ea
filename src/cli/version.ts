import { readFileSync } from "node:fs";

declare const TBUCKET_VERSION: string | undefined;

/** The package version; a bundled build defines TBUCKET_VERSION at build time. */
export function version(): string {
  if (typeof TBUCKET_VERSION === "string") return TBUCKET_VERSION;
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
  return manifest.version;
}

import { closeSync, fsyncSync, lstatSync, mkdirSync, openSync, renameSync, statSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** What the standalone build knows about a native addon it carries as a SEA asset (SQLite's, tbucket's own). */
export interface EmbeddedAddon {
  /** What it is, for messages: "the SQLite addon". */
  label?: string;
  /** The SEA asset's key. */
  assetKey: string;
  /** Bytes of the addon, to tell a complete copy from a partial one. */
  sizeBytes: number;
  /** The start of its SHA-256 in hex: a new addon gets a new file name. */
  sha256: string;
  version: string;
  /** Returns the addon's bytes (node:sea getAsset); called only when no copy exists yet. */
  readAsset(): ArrayBuffer;
}

/**
 * Native addons load only from a file, so the standalone executable writes an
 * addon it carries to `$TMPDIR/tbucket-<uid>/tbucket-<version>-<sha>.node` the
 * first time it is needed, and reuses it afterwards. The folder is private
 * (0700, owned by the user, checked), so no other user can plant a library
 * there; the file is written under a temporary name and renamed, so two
 * processes starting at once never load a half-written file.
 */
export function materializeAddon(addon: EmbeddedAddon, baseDir: string = tmpdir()): string {
  const dir = join(baseDir, `tbucket-${process.getuid?.() ?? "user"}`);
  const label = addon.label ?? "the SQLite addon";
  ensurePrivateDir(dir, label);
  const path = join(dir, `tbucket-${addon.version}-${addon.sha256}.node`);
  const existing = statOrUndefined(path);
  if (existing?.isFile() && existing.size === addon.sizeBytes) return path;

  const partial = `${path}.${process.pid}.partial`;
  try {
    const fd = openSync(partial, "w", 0o700);
    try {
      const bytes = new Uint8Array(addon.readAsset());
      for (let offset = 0; offset < bytes.length; ) offset += writeSync(fd, bytes, offset);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(partial, path);
  } catch (error) {
    try {
      unlinkSync(partial);
    } catch {
      // Nothing was written.
    }
    throw new Error(`cannot write ${label} to ${dir}: ${(error as Error).message}; set TMPDIR to a writable folder`);
  }
  return path;
}

function ensurePrivateDir(dir: string, label: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
      throw new Error(`cannot create ${dir} for ${label}: ${(error as Error).message}; set TMPDIR to a writable folder`);
    }
  }
  // lstat: a symbolic link planted by someone else must not be followed.
  const stats = lstatSync(dir);
  const uid = process.getuid?.();
  if (!stats.isDirectory() || (uid !== undefined && stats.uid !== uid) || (stats.mode & 0o022) !== 0) {
    throw new Error(`${dir} is not a private folder of this user; remove it or set TMPDIR to another folder`);
  }
}

function statOrUndefined(path: string) {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

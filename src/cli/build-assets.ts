/**
 * What this build of the CLI carries beside its code, set once by its entry
 * point through main's options: the standalone executable writes out its own
 * SQLite addon and native part when first asked. Lower layers only ever get
 * these as arguments.
 */
export interface BuildAssets {
  /** Where SQLite's compiled addon is, asked only when a SQLite store opens. */
  sqliteNativeBinding?: () => string;
  /** Where tbucket's native part (splice, pipe sizes) is, asked only when a pipe starts; throws when it cannot be written out. */
  ioNativePath?: () => string;
}

let assets: Readonly<BuildAssets> = {};

export function setBuildAssets(given: BuildAssets): void {
  assets = given;
}

export function buildAssets(): Readonly<BuildAssets> {
  return assets;
}

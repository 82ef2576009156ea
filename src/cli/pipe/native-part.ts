import { type NativeIo, nativeIo } from "../../stream/native-io.js";
import { buildAssets } from "../build-assets.js";

/** Set to 0 to copy through the JavaScript path even where the native part exists. */
const NATIVE_ENV = "TBUCKET_NATIVE";

/**
 * tbucket's native part (splice, pipe sizes) as this process may use it: the
 * copy this build carries first, else the one built at install; none where it
 * is missing or TBUCKET_NATIVE=0 turns it off.
 */
export function loadNativeIo(): NativeIo | undefined {
  if (process.env[NATIVE_ENV] === "0") return undefined;
  return nativeIo(buildAssets().ioNativePath);
}

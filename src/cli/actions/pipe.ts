import type { PipeConfig } from "../commands/pipe.js";

export async function runPipe(_config: PipeConfig): Promise<number> {
  throw new Error("pipe: in progress");
}

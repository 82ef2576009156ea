// The same end-to-end tests of the pipe through its JavaScript path (read(2) and write(2)),
// which is what runs where the native part (splice, pipe sizes) is missing: TBUCKET_NATIVE=0.
process.env.TBUCKET_NATIVE = "0";
await import("./pipe.test.js");
await import("./pipe-output.test.js");

// The timing tests of the pipe through its JavaScript path (TBUCKET_NATIVE=0), as where the
// native part is missing.
process.env.TBUCKET_NATIVE = "0";
await import("./pipe.test.js");
await import("./pipe-signals.test.js");

// The Node options `berth serve` runs with, however it is started: `npm start`,
// deploy/berth.service, the sandbox and the tests (test/docs.test.ts and test/cli/init.test.ts check
// the first two).
//
// --max-semi-space-size=4: a young generation of 4 MB a half instead of V8's 16-32 MB. Listing
// 100,000 accounts makes hundreds of megabytes of short-lived strings; a larger nursery only holds
// more of them at once, and the process keeps the memory it grew to (docs/benchmarks.md).
export const SERVE_NODE_FLAGS = ['--max-semi-space-size=4'];

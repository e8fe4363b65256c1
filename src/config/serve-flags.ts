// The Node options `berth serve` runs with wherever Berth starts it: `npm start`,
// deploy/berth.service, the sandbox and the tests (test/docs.test.ts and test/cli/init.test.ts check
// the first two). V8 reads them before the program runs, so `npx berth serve` typed by hand runs
// without them unless given: `node_modules/.bin/node --max-semi-space-size=8 bin/berth.js serve`.
//
// --max-semi-space-size=8: a young generation of 8 MB a half instead of V8's 16-32 MB. Listing
// 100,000 accounts makes hundreds of megabytes of short-lived strings; a larger nursery holds more
// of them at once, a smaller one moves more of them to the old generation before they die, and
// the process keeps the memory it grew to either way. Measured with bench 5a (resident memory
// after a full listaccts and usagestatistics of 100,000 accounts): 197-200 MB at 8, 212-221 at 16,
// 321-333 at 4 (docs/benchmarks.md).
export const SERVE_NODE_FLAGS = ['--max-semi-space-size=8'];

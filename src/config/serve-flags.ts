// The Node options `berth serve` runs with wherever Berth starts it: `npm start`,
// deploy/berth.service, the sandbox and the tests (test/docs.test.ts and test/cli/init.test.ts check
// the first two). V8 reads them before the program runs, so `npx berth serve` typed by hand runs
// without them unless given: `node_modules/.bin/node --max-semi-space-size=4 bin/berth.js serve`.
//
// --max-semi-space-size=4: a young generation of 4 MB a half instead of V8's 16-32 MB. Listing
// 100,000 accounts makes hundreds of megabytes of short-lived strings; a larger nursery only holds
// more of them at once, and the process keeps the memory it grew to (docs/benchmarks.md).
export const SERVE_NODE_FLAGS = ['--max-semi-space-size=4'];

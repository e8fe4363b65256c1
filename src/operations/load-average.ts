import { loadavg } from 'node:os';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const loadAverage = defineOperation({
  name: 'load-average',
  summary: "The server's 1, 5 and 15 minute load averages.",
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.loadAverage,
  errors: [],
  async run() {
    const load_average = loadavg()
      .map((n) => n.toFixed(2))
      .join(' ');
    return { data: { load_average }, info: 'Server load average' };
  },
});

// Writes the benchmark results: a Markdown table with the machine they ran on, and an SVG chart.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, freemem, totalmem } from 'node:os';
import { basename, dirname, join } from 'node:path';

export interface Measurement {
  scenario: string;
  metric: string;
  berth: number;
  baseline: number;
  higherIsBetter: boolean;
  /** A ratio to the baseline, an absolute bound on Berth's figure, or only a figure to report. */
  target: { ratio?: number; absolute?: number; text: string };
  /** Non-2xx answers and connection errors seen by the measuring client. */
  errors: number;
}

export function verdict(m: Measurement): 'met' | 'missed' | 'reported' {
  const better = (value: number, bound: number) => (m.higherIsBetter ? value >= bound : value <= bound);
  if (m.errors > 0) return 'missed';
  if (m.target.ratio !== undefined) return better(m.berth / m.baseline, m.target.ratio) ? 'met' : 'missed';
  if (m.target.absolute !== undefined) return better(m.berth, m.target.absolute) ? 'met' : 'missed';
  return 'reported';
}

const figure = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en') : n.toFixed(n >= 10 ? 1 : 2));
const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function chart(measurements: Measurement[]): string {
  const rowHeight = 46;
  const width = 760;
  const barLeft = 330;
  const barWidth = width - barLeft - 90;
  const rows = measurements.map((m, i) => {
    const y = 30 + i * rowHeight;
    const scale = Math.max(m.berth, m.baseline) || 1;
    const bar = (value: number, dy: number, colour: string) =>
      `<rect x="${barLeft}" y="${y + dy}" width="${Math.max(1, (value / scale) * barWidth).toFixed(1)}" height="14" fill="${colour}"/>` +
      `<text x="${barLeft + (value / scale) * barWidth + 6}" y="${y + dy + 11}" font-size="11">${escapeXml(figure(value))}</text>`;
    const label = m.scenario.length > 52 ? `${m.scenario.slice(0, 50)}…` : m.scenario;
    return [
      `<text x="8" y="${y + 12}" font-size="12">${escapeXml(label)}</text>`,
      `<text x="8" y="${y + 28}" font-size="11" fill="#5b6475">${escapeXml(m.metric)} · ${verdict(m)}</text>`,
      bar(m.berth, 0, '#1f5fbf'),
      bar(m.baseline, 17, '#9aa5b8'),
    ].join('');
  });
  const height = 40 + measurements.length * rowHeight;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<rect x="${barLeft}" y="8" width="12" height="12" fill="#1f5fbf"/><text x="${barLeft + 16}" y="18" font-size="11">Berth</text>`,
    `<rect x="${barLeft + 70}" y="8" width="12" height="12" fill="#9aa5b8"/><text x="${barLeft + 86}" y="18" font-size="11">baseline</text>`,
    ...rows,
    '</svg>',
    '',
  ].join('\n');
}

const BACKUPS = new URL('backups.md', import.meta.url);

export function writeReport(
  out: string,
  measurements: Measurement[],
  run: { smoke: boolean; duration: number },
): void {
  const svgName = `${basename(out, '.md')}.svg`;
  writeFileSync(join(dirname(out), svgName), chart(measurements));
  const cpu = cpus();
  const lines = [
    '# Benchmarks',
    '',
    'Written by `npm run bench`. Each figure is measured against a baseline in the same run: a bare',
    'Node HTTPS server with the same certificate, keep-alive and envelope, answering from bodies',
    'built in advance (the ceiling of the machine), or Berth itself at rest. Load comes from',
    'autocannon in the same process as the runner, so Berth, the baseline and the load share the machine.',
    '',
    `- Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB memory (${Math.round(freemem() / 2 ** 30)} GiB free at the end)`,
    `- Node ${process.version}, ${process.platform} ${process.arch}; ${run.duration} s per measurement${run.smoke ? ' (smoke run: small sizes, not figures to quote)' : ''}`,
    `- Run at ${new Date().toISOString()}`,
    '',
    '| scenario | metric | Berth | baseline | ratio | target | result |',
    '|---|---|---:|---:|---:|---|---|',
    ...measurements.map((m) => {
      const result = verdict(m);
      const errors = m.errors > 0 ? ` (${m.errors} errors)` : '';
      return `| ${m.scenario} | ${m.metric} | ${figure(m.berth)} | ${figure(m.baseline)} | ${m.baseline === 0 ? '—' : (m.berth / m.baseline).toFixed(2)} | ${m.target.text} | ${result}${errors} |`;
    }),
    '',
    `![Berth and its baselines](${svgName})`,
    '',
    readFileSync(new URL('analysis.md', import.meta.url), 'utf8'),
    // The backups' figures, measured apart (node bench/backups.ts: a system root and restic).
    ...(existsSync(BACKUPS) ? ['', readFileSync(BACKUPS, 'utf8')] : []),
  ];
  writeFileSync(out, lines.join('\n'));
}

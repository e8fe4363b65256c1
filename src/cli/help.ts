// What `berth --help` and `berth <command> --help` print, from the commands' own descriptions.

import { COMMON_OPTIONS, type Command, type Option, type Options } from './command.ts';
import { SERVER_OPTIONS } from './configuration.ts';

function optionName(name: string, option: Option): string {
  const long = option.value ? `--${name} ${option.value}` : `--${name}`;
  return option.short ? `-${option.short}, ${long}` : long;
}

function optionRows(options: Options, width: number): string {
  return Object.entries(options)
    .map(([name, option]) => `  ${optionName(name, option).padEnd(width)}  ${option.help}\n`)
    .join('');
}

function usageLines(forms: readonly string[]): string {
  return forms.map((form, i) => `${i === 0 ? 'usage:' : '      '} berth ${form}\n`).join('');
}

/** `berth --help`: every command and what it is for. */
export function overview(commands: readonly Command[]): string {
  const listed = commands.filter((command) => !command.hidden);
  const width = Math.max(...listed.map((command) => command.name.length));
  return [
    usageLines(['<command> [options]', '<command> --help', '--version']),
    '\ncommands:\n',
    ...listed.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}\n`),
    '\nEvery command takes --data-dir DIR and --database postgres://…; its --help shows the rest.\n',
  ].join('');
}

/** `berth <command> --help`: its forms, what it does, and every option it takes. */
export function commandHelp(command: Command): string {
  const all = { ...command.options, ...COMMON_OPTIONS };
  const width = Math.max(...Object.entries(all).map(([name, option]) => optionName(name, option).length));
  const inherited = command.configured
    ? Object.keys(SERVER_OPTIONS).filter((name) => !(name in command.options))
    : [];
  return [
    usageLines(command.usage),
    `\n${command.summary[0]!.toUpperCase()}${command.summary.slice(1)}.\n`,
    Object.keys(command.options).length > 0 ? `\noptions:\n${optionRows(command.options, width)}` : '',
    `\ncommon options:\n${optionRows(COMMON_OPTIONS, width)}`,
    inherited.length > 0
      ? `\nLike serve, it reads berth.toml, and serve's options override it here too:\n  ${inherited.map((name) => `--${name}`).join(' ')} (berth serve --help)\n`
      : '',
  ].join('');
}

/** After a mistake in a command's line: its forms, and where the rest is. */
export function commandUsage(command: Command): string {
  return `${usageLines(command.usage)}berth ${command.name} --help shows its options.\n`;
}

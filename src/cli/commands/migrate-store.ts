import { migrateStore } from '../../store/migrate-store.ts';
import { isPostgresUrl } from '../../store/open.ts';
import { type Command, UsageError } from '../command.ts';

export const migrateStoreCommand: Command = {
  name: 'migrate-store',
  summary: 'copies an SQLite store into an empty PostgreSQL one and checks the counts',
  usage: ['migrate-store --from sqlite:PATH --to postgres://…'],
  options: {
    from: { type: 'string', value: 'sqlite:PATH', help: 'the SQLite store to copy' },
    to: { type: 'string', value: 'postgres://…', help: 'the empty PostgreSQL store to fill' },
  },
  configured: false,
  async run(_args, flags, io) {
    const from = flags.from as string | undefined;
    const to = flags.to as string | undefined;
    if (!from?.startsWith('sqlite:') || !to || !isPostgresUrl(to)) {
      throw new UsageError('migrate-store takes --from sqlite:PATH --to postgres://…');
    }
    const counts = await migrateStore(from.slice('sqlite:'.length), to);
    const summary = Object.entries(counts)
      .map(([table, n]) => `${table} ${n}`)
      .join(', ');
    io.out(`Copied every row, counts checked: ${summary}\n`);
    return 0;
  },
};

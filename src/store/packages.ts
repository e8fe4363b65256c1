// Hosting packages in the store.
import type { Limits } from './accounts.ts';
import { limitsOf } from './accounts.ts';
import { notePackage } from './pending.ts';
import type { Db, PackageRow } from './schema.ts';

export interface Package {
  name: string;
  feature: string;
  limits: Limits;
  ipv4: boolean;
  ipv6: boolean;
  shell: boolean;
}

function toPackage(row: PackageRow): Package {
  const limits = limitsOf(row);
  return {
    name: row.name,
    feature: row.feature,
    limits,
    ipv4: row.ipv4 === 1,
    ipv6: row.ipv6 === 1,
    shell: row.shell === 1,
  };
}

function toRow(pkg: Package): PackageRow {
  return {
    name: pkg.name,
    feature: pkg.feature,
    ...pkg.limits,
    ipv4: pkg.ipv4 ? 1 : 0,
    ipv6: pkg.ipv6 ? 1 : 0,
    shell: pkg.shell ? 1 : 0,
  };
}

export async function findPackage(db: Db, name: string): Promise<Package | undefined> {
  const row = await db.selectFrom('packages').selectAll().where('name', '=', name).executeTakeFirst();
  return row && toPackage(row);
}

export async function listPackages(db: Db): Promise<Package[]> {
  const rows = await db.selectFrom('packages').selectAll().execute();
  // Code-point order, whatever the database's collation.
  return rows.map(toPackage).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export async function insertPackage(db: Db, pkg: Package): Promise<void> {
  await db.insertInto('packages').values(toRow(pkg)).execute();
}

export async function savePackage(db: Db, pkg: Package): Promise<void> {
  const { name, ...rest } = toRow(pkg);
  await notePackage(db, name);
  await db.updateTable('packages').set(rest).where('name', '=', name).execute();
}

export async function deletePackage(db: Db, name: string): Promise<void> {
  await db.deleteFrom('packages').where('name', '=', name).execute();
}

// The limits an account or package has (createacct, addpkg, editpkg), and a package's other fields.
import { kinds, optional } from './operation.ts';

const limit = (description: string) => optional(kinds.limit, `${description}; \`unlimited\` or a number`);

export const limitParams = {
  quota: limit('Disk quota in MB'),
  bandwidth: limit('Bandwidth in MB'),
  addondomains: limit('Addon domains'),
  parkeddomains: limit('Parked domains'),
  subdomains: limit('Subdomains'),
  email_accounts: limit('E-mail accounts'),
  ftp: limit('FTP accounts'),
  sql: limit('Databases'),
  maillist: limit('Mailing lists'),
  mailquota: limit('Default e-mail quota in MB'),
};

export const packageFields = {
  ...limitParams,
  feature: optional(kinds.featureList, 'Feature list name'),
  ipv4: optional(kinds.switch, 'Accounts get a dedicated IPv4 address'),
  ipv6: optional(kinds.switch, 'Accounts get a dedicated IPv6 address'),
  shell: optional(kinds.switch, 'Accounts get shell access'),
};

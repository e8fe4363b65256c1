// Packages: list, add, edit, delete (through addpkg, editpkg and killpkg).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { packageObject } from '../operations/record.ts';
import { findPackage, listPackages } from '../store/packages.ts';
import type { PortalSession } from '../store/portal-sessions.ts';
import { type FormErrors, type FormSpec, formView, refusal } from '../web-kit/form.ts';
import { field, listPage, type Portal, type WithSession } from './page.ts';

export const LIMIT_FIELDS = [
  ['quota', 'Disk quota (MB)'],
  ['bandwidth', 'Bandwidth (MB)'],
  ['email_accounts', 'E-mail accounts'],
  ['mailquota', 'E-mail quota (MB)'],
  ['ftp', 'FTP accounts'],
  ['sql', 'Databases'],
  ['addondomains', 'Addon domains'],
  ['parkeddomains', 'Parked domains'],
  ['subdomains', 'Subdomains'],
  ['maillist', 'Mailing lists'],
] as const;
export const SWITCH_FIELDS = [
  ['shell', 'Shell access'],
  ['ipv4', 'Dedicated IPv4 address'],
  ['ipv6', 'Dedicated IPv6 address'],
] as const;

/** The package form's fields; `prefix` keeps the ids apart when the add form shares a page. */
function packageForm(prefix: string): FormSpec {
  const spec: Record<string, { label: string; id: string }> = {
    name: { label: 'Package name', id: `${prefix}name` },
  };
  for (const [name, label] of LIMIT_FIELDS) spec[name] = { label, id: `${prefix}${name}` };
  spec.feature = { label: 'Feature list', id: `${prefix}feature` };
  return spec;
}
const ADD_FORM = packageForm('new-');
const EDIT_FORM = packageForm('');

const COLUMNS = [
  'Name',
  'Disk quota',
  'Bandwidth',
  'E-mail',
  'FTP',
  'Databases',
  'Feature list',
  'Shell',
].map((label) => ({ label }));

/** The package fields of a submitted form, as operation parameters. */
function packageParams(request: FastifyRequest): Record<string, string> {
  const params: Record<string, string> = {
    name: field(request, 'name').trim(),
    feature: field(request, 'feature').trim() || 'default',
  };
  for (const [name] of LIMIT_FIELDS) params[name] = field(request, name).trim() || 'unlimited';
  for (const [name] of SWITCH_FIELDS) params[name] = field(request, name) === 'on' ? 'on' : 'off';
  return params;
}

export function registerPackagePages(app: FastifyInstance, portal: Portal, route: WithSession): void {
  const { db } = portal.services.store;
  const common = { nav: 'packages', limitFields: LIMIT_FIELDS, switchFields: SWITCH_FIELDS };

  const list = listPage(portal, 'packages', ADD_FORM, async () => ({
    title: 'Packages',
    columns: COLUMNS,
    rows: (await listPackages(db)).map(packageObject).map((p) => ({
      cells: [
        { text: p.name, href: `/packages/${encodeURIComponent(p.name)}` },
        p.quota,
        p.bandwidth,
        p.email_accounts,
        p.ftp,
        p.sql,
        p.feature,
        p.shell,
      ],
    })),
    ...common,
  }));

  const edit = (
    reply: FastifyReply,
    session: PortalSession,
    values: Record<string, string>,
    errors: FormErrors = {},
    status = 200,
  ) =>
    portal.render(
      reply,
      'package',
      {
        title: `Package ${values.name}`,
        name: values.name,
        csrf: session.csrf,
        form: formView(EDIT_FORM, values, errors),
        ...common,
      },
      status,
    );

  app.get(
    '/packages',
    route(async (request, reply, session) =>
      list(reply, session, { notice: portal.takeNotice(request, reply, session) }),
    ),
  );

  app.post(
    '/packages',
    route(async (request, reply, session) => {
      const params = packageParams(request);
      try {
        await portal.run(request, 'addpkg', params);
      } catch (error) {
        return list(reply, session, { values: params, errors: refusal(ADD_FORM, error) }, 400);
      }
      return portal.redirectWithNotice(reply, session, '/packages', `Package ${params.name} added.`);
    }),
  );

  app.get(
    '/packages/:name',
    route(async (request, reply, session) => {
      const pkg = await findPackage(db, (request.params as { name: string }).name);
      if (!pkg) return reply.redirect('/packages', 303);
      return edit(reply, session, packageObject(pkg) as Record<string, string>);
    }),
  );

  app.post(
    '/packages/:name',
    route(async (request, reply, session) => {
      const { name } = request.params as { name: string };
      const current = await findPackage(db, name);
      if (!current) return reply.redirect('/packages', 303);
      // Only what changed is sent, so accounts keep their own values for the fields left alone.
      const before = packageObject(current) as Record<string, string>;
      const submitted = { ...packageParams(request), name };
      const changed = Object.fromEntries(
        Object.entries(submitted).filter(([key, value]) => key === 'name' || before[key] !== value),
      );
      try {
        await portal.run(request, 'editpkg', changed);
      } catch (error) {
        return edit(reply, session, submitted, refusal(EDIT_FORM, error), 400);
      }
      return portal.redirectWithNotice(reply, session, '/packages', `Package ${name} changed.`);
    }),
  );

  app.get(
    '/packages/:name/delete',
    route(async (request, reply, session) => {
      const { name } = request.params as { name: string };
      return portal.render(reply, 'confirm', {
        title: `Delete package ${name}?`,
        nav: 'packages',
        csrf: session.csrf,
        question: `Delete the package ${name}? Only a package no account uses can be deleted.`,
        action: `/packages/${encodeURIComponent(name)}/delete`,
        button: 'Delete package',
        back: `/packages/${encodeURIComponent(name)}`,
      });
    }),
  );

  app.post(
    '/packages/:name/delete',
    route(async (request, reply, session) => {
      const { name } = request.params as { name: string };
      try {
        await portal.run(request, 'killpkg', { name });
      } catch (error) {
        // The package's name is no field of the list page: the refusal is the page's own.
        const message = Object.values(refusal({ name: { label: `Package ${name}` } }, error)).join(' ');
        return list(reply, session, { errors: { form: message } }, 400);
      }
      return portal.redirectWithNotice(reply, session, '/packages', `Package ${name} deleted.`);
    }),
  );
}

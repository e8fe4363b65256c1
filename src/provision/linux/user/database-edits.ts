// What Berth's edits do to the lines of the user database (database.ts reads and writes the files):
// each as the shadow tools would write it, checked whole before anything of it changes.

export const FILES = ['passwd', 'shadow', 'group', 'gshadow'] as const;
export type File = (typeof FILES)[number];

/** One file's lines, each split at `:`. */
export type Tables = Record<File, string[][]>;

/** The account suspended or not: what usermod -L or -U, -s and -G would make of it. */
export interface UserEdit {
  user: string;
  /** The password locked (`!` before its hash) or unlocked. */
  locked: boolean;
  shell: string;
  /** The user's supplementary groups, exactly; left as they are when absent. */
  groups?: readonly string[];
}

/** A new user, with its own group of the same number: what useradd -U, then chpasswd -e, make. */
export interface NewUser {
  user: string;
  /** The user's id and its group's; null: the next free one, as useradd picks it. */
  uid: number | null;
  gecos: string;
  home: string;
  shell: string;
  groups: readonly string[];
  /** The password field: a hash, or `!` for none yet. */
  hash: string;
}

/** What login.defs gives a new user (useradd reads the same). */
export interface Defaults {
  uidMin: number;
  uidMax: number;
  /** PASS_MIN_DAYS, PASS_MAX_DAYS, PASS_WARN_AGE: empty when unset, as useradd leaves them. */
  passwordAges: [string, string, string];
}

export function readDefaults(loginDefs: string): Defaults {
  const values = new Map<string, string>();
  for (const line of loginDefs.split('\n')) {
    const found = /^\s*([A-Z_]+)\s+(\S+)/.exec(line);
    if (found) values.set(found[1]!, found[2]!);
  }
  const number = (name: string, fallback: number) => {
    const value = Number(values.get(name));
    return Number.isInteger(value) ? value : fallback;
  };
  // -1 (or none) is no limit, which useradd writes as an empty field.
  const age = (name: string) =>
    /^\d+$/.test(values.get(name) ?? '') ? String(Number(values.get(name))) : '';
  return {
    uidMin: number('UID_MIN', 1000),
    uidMax: number('UID_MAX', 60000),
    passwordAges: [age('PASS_MIN_DAYS'), age('PASS_MAX_DAYS'), age('PASS_WARN_AGE')],
  };
}

const DAY = 86_400_000;

/**
 * The lines of the four files, found by name (the first line of a name, as the tools read it), and
 * the edits applied to them. It lasts as long as the lines do: each edit keeps what it finds by
 * name up to date, and `now` is read at each new user. `touched` holds each file's lines an edit
 * changed (or added) since its writer last emptied it: only those need joining again.
 */
export function userTables(tables: Tables, defaults: Defaults, now: () => number = Date.now) {
  const touched = Object.fromEntries(FILES.map((file) => [file, new Set<string[]>()])) as Record<
    File,
    Set<string[]>
  >;
  /**
   * The lines of group and gshadow that list members, and every line of each name: a user's groups
   * set is a look through those, not through a line for every account.
   */
  const listing = { group: new Set<string[]>(), gshadow: new Set<string[]>() };
  const named = { group: new Map<string, string[][]>(), gshadow: new Map<string, string[][]>() };
  const noteMembers = (file: 'group' | 'gshadow', line: string[]) => {
    if (line.length >= 4 && line[3] !== '') listing[file].add(line);
    else listing[file].delete(line);
  };
  const noteName = (file: 'group' | 'gshadow', line: string[]) =>
    named[file].set(line[0]!, [...(named[file].get(line[0]!) ?? []), line]);
  for (const file of ['group', 'gshadow'] as const)
    for (const line of tables[file]) {
      noteMembers(file, line);
      noteName(file, line);
    }
  /** Sets a field of a line of `file`, noting the line when the field changes. */
  const set = (file: File, line: string[], field: number, value: string) => {
    if (line[field] === value) return;
    line[field] = value;
    touched[file].add(line);
    if (file === 'group' || file === 'gshadow') noteMembers(file, line);
  };
  const byName = {} as Record<File, Map<string, string[]>>;
  for (const file of FILES) {
    const names = new Map<string, string[]>();
    for (const line of tables[file]) if (!names.has(line[0]!)) names.set(line[0]!, line);
    byName[file] = names;
  }
  const uids = new Set(tables.passwd.map((line) => Number(line[2])));
  const isNis = (name: string) => name.startsWith('+') || name.startsWith('-');
  /** The files with no NIS entry: a new line (never one) goes last, with no search. */
  const nisFree = new Set(
    FILES.map((file) => tables[file]).filter((lines) => !lines.some(([name]) => isNis(name!))),
  );
  const gids = new Set(tables.group.map((line) => Number(line[2])));

  const existingGroups = (groups: readonly string[]) => {
    for (const group of groups) {
      const line = byName.group.get(group);
      if (!line) throw new Error(`group '${group}' does not exist`);
      if (line.length < 4) throw new Error(`the line of group '${group}' in /etc/group is not whole`);
    }
  };
  /**
   * The names of a line's member list, and whether the list is well formed (no empty name), for
   * the list it was made from: a group of every account (`berth-sftp`) lists thousands, and a new
   * account's name was looked for through all of them, twice a file.
   */
  const memberLists = new WeakMap<string[], { list: string; names: Set<string>; wellFormed: boolean }>();
  const membersOf = (line: string[]) => {
    const list = line[3]!;
    let known = memberLists.get(line);
    if (known?.list !== list) {
      known = {
        list,
        names: new Set(list.split(',')),
        wellFormed: list !== '' && !list.startsWith(',') && !list.endsWith(',') && !list.includes(',,'),
      };
      memberLists.set(line, known);
    }
    return known;
  };
  /**
   * The user in or out of a group's member list (group and gshadow): a member keeps its place.
   * A well-formed list is added to as text, and cut as text when the user is named once.
   */
  const member = (file: 'group' | 'gshadow', line: string[] | undefined, user: string, wanted: boolean) => {
    if (!line || line.length < 4) return;
    const known = membersOf(line);
    if (known.names.has(user) === wanted) return;
    const list = line[3]!;
    if (known.wellFormed) {
      if (wanted) {
        // Joined, not concatenated: a string made by `+` is a rope of its parts, which V8 walks
        // whole at each later join of the line; a list grown by `+` at every createacct became a
        // rope thousands deep, walked at every rewrite of group and gshadow.
        const grown = [list, user].join(',');
        set(file, line, 3, grown);
        known.list = grown;
        known.names.add(user);
        return;
      }
      const at = memberAt(list, user);
      const cut =
        at === 0 ? list.slice(user.length + 1) : `${list.slice(0, at - 1)}${list.slice(at + user.length)}`;
      // Named once: cut out. Named twice, the list is split as below.
      if (memberAt(cut, user) === -1) return set(file, line, 3, cut);
    }
    const members = list.split(',').filter((name) => name !== '');
    set(file, line, 3, (wanted ? [...members, user] : members.filter((name) => name !== user)).join(','));
  };

  /** Where `user` is in a comma-separated list as a whole name, or -1. */
  function memberAt(list: string, user: string): number {
    for (let at = list.indexOf(user); at !== -1; at = list.indexOf(user, at + 1)) {
      const end = at + user.length;
      if ((at === 0 || list[at - 1] === ',') && (end === list.length || list[end] === ',')) return at;
    }
    return -1;
  }

  return {
    touched,

    edit(edit: UserEdit): void {
      const user = byName.passwd.get(edit.user);
      const shadow = byName.shadow.get(edit.user);
      if (!user || user.length < 7 || !shadow || shadow.length < 2)
        throw new Error(`user '${edit.user}' does not exist`);
      existingGroups(edit.groups ?? []);
      set('passwd', user, 6, edit.shell);
      const hash = shadow[1]!;
      if (edit.locked && !hash.startsWith('!')) set('shadow', shadow, 1, `!${hash}`);
      // A password never set stays locked: unlocking it would leave none (usermod -U refuses).
      if (!edit.locked && hash.startsWith('!') && hash.length > 1) set('shadow', shadow, 1, hash.slice(1));
      if (!edit.groups) return;
      const wanted = new Set(edit.groups);
      for (const file of ['group', 'gshadow'] as const) {
        const lines = new Set(listing[file]);
        for (const group of wanted) for (const line of named[file].get(group) ?? []) lines.add(line);
        for (const line of lines) member(file, line, edit.user, wanted.has(line[0]!));
      }
    },

    add(user: NewUser): void {
      const { user: name, gecos, home, shell, hash, groups } = user;
      if ([name, gecos, home, shell, hash].some((field) => /[:\n]/.test(field)))
        throw new Error(`refusing a user ${name} with a field that would leave its line`);
      if (isNis(name)) throw new Error(`refusing a user ${name}: a name of NIS's`);
      // A line left in shadow or gshadow without its user or group is replaced, as useradd does.
      for (const file of ['passwd', 'group'] as const)
        if (byName[file].has(name)) throw new Error(`'${name}' is in /etc/${file} already`);
      existingGroups(groups);
      const id = user.uid ?? nextId();
      if (uids.has(id)) throw new Error(`user id ${id} is taken`);
      if (gids.has(id)) throw new Error(`group id ${id} is taken`);
      const [min, max, warn] = defaults.passwordAges;
      const lines: Record<File, string[]> = {
        passwd: [name, 'x', String(id), String(id), gecos, home, shell],
        shadow: [name, hash, String(Math.floor(now() / DAY)), min, max, warn, '', '', ''],
        group: [name, 'x', String(id), ''],
        gshadow: [name, '!', '', ''],
      };
      // Every line of each group's name, as useradd -G does.
      for (const group of groups)
        for (const file of ['group', 'gshadow'] as const)
          for (const line of named[file].get(group) ?? []) member(file, line, name, true);
      for (const file of FILES) {
        const left = byName[file].get(name);
        if (left) left.splice(0, left.length, ...lines[file]);
        else insert(tables[file], lines[file]);
        byName[file].set(name, left ?? lines[file]);
        touched[file].add(left ?? lines[file]);
        if (file === 'group' || file === 'gshadow') {
          noteMembers(file, left ?? lines[file]);
          if (!left) noteName(file, lines[file]);
        }
      }
      uids.add(id);
      gids.add(id);
    },
  };

  /** A new line last, or before the first NIS entry (`+`, `-`), where the shadow tools put it. */
  function insert(lines: string[][], line: string[]): void {
    const nis = nisFree.has(lines) ? -1 : lines.findIndex(([name]) => isNis(name!));
    if (nis === -1) lines.push(line);
    else lines.splice(nis, 0, line);
  }

  /** One past the highest user id in login.defs' range, free as a group id too (useradd's pick). */
  function nextId(): number {
    let id = defaults.uidMin;
    for (const used of uids) if (used >= id && used <= defaults.uidMax) id = used + 1;
    while (uids.has(id) || gids.has(id)) id++;
    if (id > defaults.uidMax) throw new Error('no user id is left in login.defs’ range');
    return id;
  }
}

import type { SandboxFixture } from './fixture.js';

/** Password of every seeded user with status active or inactive (registered users have none). */
export const DEMO_PASSWORD = 'demo-password';
/** Password and admin password of the seeded `admin`. */
export const DEMO_ADMIN_PASSWORD = 'sandbox-admin-password';

const BASE = Date.parse('2024-08-01T07:00:00Z');
const at = (minutes: number) =>
  new Date(BASE + minutes * 60_000).toISOString().replace(/\.\d{3}Z$/, '+00:00');

type Kind = 'admin' | 'teacher' | 'student' | 'staff';

interface Person {
  first: string;
  last: string;
  kind: Kind;
  auxInfo?: string;
  status?: 'active' | 'registered' | 'inactive';
  locked?: boolean;
  deleted?: boolean;
  email?: string;
}

const account = (p: Person) =>
  `${p.first}.${p.last}`
    .toLowerCase()
    .replaceAll('ä', 'ae')
    .replaceAll('ö', 'oe')
    .replaceAll('ü', 'ue')
    .replaceAll('ß', 'ss');

const PEOPLE: Person[] = [
  { first: 'Sabine', last: 'Krüger', kind: 'staff', email: 'sabine.krueger@schulverwaltung.example' },
  { first: 'Thomas', last: 'Becker', kind: 'teacher', email: 'thomas.becker@example.org' },
  { first: 'Claudia', last: 'Hoffmann', kind: 'teacher' },
  { first: 'Michael', last: 'Schäfer', kind: 'teacher' },
  { first: 'Julia', last: 'Neumann', kind: 'teacher', status: 'inactive' },
  { first: 'Andreas', last: 'Wolf', kind: 'teacher' },
  { first: 'Petra', last: 'Zimmermann', kind: 'staff' },
  { first: 'Lena', last: 'Müller', kind: 'student', auxInfo: '5a' },
  { first: 'Jonas', last: 'Schmidt', kind: 'student', auxInfo: '5a' },
  { first: 'Mia', last: 'Fischer', kind: 'student', auxInfo: '5a' },
  { first: 'Leon', last: 'Weber', kind: 'student', auxInfo: '5a', locked: true },
  { first: 'Emma', last: 'Meyer', kind: 'student', auxInfo: '5a', status: 'registered' },
  { first: 'Paul', last: 'Wagner', kind: 'student', auxInfo: '5a' },
  { first: 'Hannah', last: 'Schulz', kind: 'student', auxInfo: '7b' },
  { first: 'Finn', last: 'Koch', kind: 'student', auxInfo: '7b' },
  { first: 'Sophie', last: 'Bauer', kind: 'student', auxInfo: '7b', status: 'registered' },
  { first: 'Luca', last: 'Richter', kind: 'student', auxInfo: '7b' },
  { first: 'Marie', last: 'Klein', kind: 'student', auxInfo: '7b' },
  { first: 'Elias', last: 'Schröder', kind: 'student', auxInfo: '7b', status: 'inactive' },
  { first: 'Lea', last: 'Braun', kind: 'student', auxInfo: '10c' },
  { first: 'Noah', last: 'Hartmann', kind: 'student', auxInfo: '10c' },
  { first: 'Emilia', last: 'Lange', kind: 'student', auxInfo: '10c', status: 'registered' },
  { first: 'Ben', last: 'Krause', kind: 'student', auxInfo: '10c', deleted: true },
  { first: 'Clara', last: 'Vogel', kind: 'student', auxInfo: '10c' },
];

const ROLE_OF: Record<Kind, string> = {
  admin: 'ROLE_ADMIN',
  teacher: 'ROLE_TEACHER',
  student: 'ROLE_STUDENT',
  staff: 'ROLE_STAFF',
};

/**
 * The documented demo data set (docs/sandbox.md): 4 roles, 6 privileges, 3 group flags, 25
 * users, 6 groups. UUIDs are name-based, so they are the same on every start; only the
 * soft-deleted user's `deleted` time follows the start time (one day before it), so that the
 * retention period never purges it at once.
 */
export function demoFixture(now: number): SandboxFixture {
  const accounts = PEOPLE.map(account);
  const byKind = (kind: Kind) => PEOPLE.filter((p) => p.kind === kind).map(account);
  const inClass = (cls: string) => PEOPLE.filter((p) => p.auxInfo === cls).map(account);
  const teachers = byKind('teacher');
  const students = byKind('student');
  return {
    privileges: [
      {
        privilege: 'core_manage_users',
        name: 'Manage users',
        description: 'Create, change and delete user accounts',
        module: 'Core',
      },
      {
        privilege: 'mail_external',
        name: 'External e-mail',
        description: 'Send and receive e-mail outside the school',
        module: 'Mail',
      },
      {
        privilege: 'files_share_groups',
        name: 'Share files with groups',
        description: 'Share files with any group',
        module: 'Files',
      },
      { privilege: 'print_colour', name: 'Colour printing', description: 'Print in colour', module: 'Print' },
      {
        privilege: 'calendar_public_edit',
        name: 'Edit public calendars',
        description: 'Create and change entries in public calendars',
        module: 'Calendar',
      },
      {
        privilege: 'internet_blocked',
        name: 'No internet access',
        description: 'Holders cannot use the internet',
        module: 'Internet',
        inverted: true,
      },
    ],
    groupFlags: [
      { name: 'has_home', title: 'Group has a home directory' },
      { name: 'mail_list', title: 'Group has a mailing list' },
      { name: 'hidden', title: 'Hidden in the address book' },
    ],
    roles: [
      {
        role: 'ROLE_ADMIN',
        name: 'Administrator',
        module: 'Core',
        privileges: ['core_manage_users', 'print_colour'],
      },
      {
        role: 'ROLE_TEACHER',
        name: 'Teacher',
        module: 'Core',
        privileges: ['mail_external', 'files_share_groups', 'calendar_public_edit'],
      },
      { role: 'ROLE_STUDENT', name: 'Student', module: 'Core', privileges: [] },
      { role: 'ROLE_STAFF', name: 'Staff', module: 'Core', privileges: ['mail_external', 'print_colour'] },
    ],
    users: [
      {
        user: 'admin',
        firstname: 'Sandbox',
        lastname: 'Administrator',
        created: at(0),
        createdBy: null,
        type: null,
        roles: ['ROLE_ADMIN'],
        lastLogin: at(60 * 24 * 400),
        password: DEMO_ADMIN_PASSWORD,
        adminPassword: DEMO_ADMIN_PASSWORD,
      },
      ...PEOPLE.map((p, i) => {
        const status = p.status ?? 'active';
        return {
          user: accounts[i] ?? '',
          firstname: p.first,
          lastname: p.last,
          auxInfo: p.auxInfo ?? null,
          importId: p.kind === 'student' || p.kind === 'teacher' ? `SVW-${1001 + i}` : null,
          emailAddress: p.email ?? null,
          locked: p.locked ?? false,
          status,
          type: p.kind,
          created: at(10 + i),
          lastLogin: status === 'active' ? at(60 * 24 * 380 + i * 97) : null,
          deleted: p.deleted ? new Date(now - 24 * 3600_000).toISOString() : null,
          roles: p.first === 'Sabine' ? [ROLE_OF[p.kind], 'ROLE_ADMIN'] : [ROLE_OF[p.kind]],
          privileges:
            p.first === 'Leon' ? ['internet_blocked'] : p.first === 'Thomas' ? ['print_colour'] : [],
          ...(status === 'registered' ? {} : { password: DEMO_PASSWORD }),
        };
      }),
    ],
    groups: [
      {
        group: 'admins',
        name: 'Administrators',
        owner: 'admin',
        created: at(1),
        members: ['admin', 'sabine.krueger'],
        privileges: ['core_manage_users'],
        flags: ['hidden'],
      },
      {
        group: 'lehrer',
        name: 'Lehrer',
        owner: 'admin',
        home: '/group/lehrer',
        created: at(2),
        members: teachers,
        privileges: ['mail_external', 'files_share_groups'],
        flags: ['has_home', 'mail_list'],
      },
      {
        group: 'schueler',
        name: 'Schüler',
        owner: 'admin',
        created: at(3),
        members: students,
        flags: ['mail_list'],
      },
      {
        group: 'klasse.5a',
        name: 'Klasse 5a',
        owner: 'claudia.hoffmann',
        home: '/group/klasse.5a',
        created: at(4),
        members: ['claudia.hoffmann', ...inClass('5a')],
        flags: ['has_home'],
      },
      {
        group: 'klasse.7b',
        name: 'Klasse 7b',
        owner: 'michael.schaefer',
        home: '/group/klasse.7b',
        created: at(5),
        members: ['michael.schaefer', ...inClass('7b')],
        privileges: ['print_colour'],
        flags: ['has_home'],
      },
      {
        group: 'ag.robotik',
        name: 'AG Robotik',
        owner: 'andreas.wolf',
        created: at(6),
        members: ['andreas.wolf', 'jonas.schmidt', 'finn.koch', 'noah.hartmann', 'lea.braun'],
        privileges: ['files_share_groups'],
      },
    ],
  };
}

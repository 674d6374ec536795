"""Stand-in for DevStack's ini functions, used by devstack/tests/harness.sh.

``ini.py set|get|add|get_multi FILE SECTION OPTION [VALUE...]``; repeated
options (multi-valued, like ``available_filters``) are kept as repeated
lines, the way DevStack's ``iniadd`` writes them.
"""

import os
import sys


def read(path):
    """Return [(section, option, value)] in file order."""
    entries = []
    section = 'DEFAULT'
    if not os.path.exists(path):
        return entries
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            if line.startswith('['):
                section = line.strip('[]')
                entries.append((section, None, None))
            else:
                key, _, value = line.partition('=')
                entries.append((section, key.strip(), value.strip()))
    return entries


def write(path, entries):
    """Write entries back, grouped by section in first-seen order."""
    sections = []
    for section, _, _ in entries:
        if section not in sections:
            sections.append(section)
    with open(path, 'w') as f:
        for section in sections:
            f.write('[%s]\n' % section)
            for s, key, value in entries:
                if s == section and key is not None:
                    f.write('%s = %s\n' % (key, value))
            f.write('\n')


def main(argv):
    """Dispatch one ini command."""
    command, path, section, option = argv[:4]
    values = argv[4:]
    entries = read(path)
    mine = [v for s, k, v in entries if s == section and k == option]
    if command == 'get':
        print(mine[-1] if mine else '')
    elif command == 'get_multi':
        print(' '.join(mine))
    elif command in ('set', 'add'):
        if command == 'set':
            entries = [e for e in entries
                       if not (e[0] == section and e[1] == option)]
            values = [' '.join(values)]
        if not any(s == section for s, _, _ in entries):
            entries.append((section, None, None))
        entries.extend((section, option, v) for v in values)
        write(path, entries)
    else:
        sys.exit('unknown command %s' % command)


if __name__ == '__main__':
    main(sys.argv[1:])

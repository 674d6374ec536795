"""What every benchmark writes next to its figures: machine, date, file."""

import datetime
import json
import os
import platform
import shlex
import subprocess


def machine():
    """CPU model and count (lscpu), hypervisor, for the results."""
    try:
        out = subprocess.run(['lscpu'], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return '%s, %d CPUs' % (platform.processor() or platform.machine(),
                                os.cpu_count())
    fields = dict(line.split(':', 1) for line in out.splitlines()
                  if ':' in line)
    return '%s, %s CPUs, %s' % (
        fields.get('Model name', '?').strip(),
        fields.get('CPU(s)', '?').strip(),
        fields.get('Hypervisor vendor', 'bare metal').strip())


def command(script, argv, python='.venv/bin/python'):
    """The command line that reran ``benchmarks/<script>`` with ``argv``."""
    return ' '.join([python, 'benchmarks/%s' % script]
                    + [shlex.quote(a) for a in argv])


def now():
    """The current UTC time, ISO 8601."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def write_json(path, doc):
    """Write a results document (indented, newline-terminated)."""
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    with open(path, 'w') as f:
        json.dump(doc, f, indent=1)
        f.write('\n')

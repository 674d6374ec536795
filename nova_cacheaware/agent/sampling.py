"""Run-time classification of ``auto`` VMs: study 000's sampling step.

Study 000 calls a VM memory-bound when its CPI while All-share (every vCPU
in one cache domain) and while Partial-share (spread over domains) differ
significantly. An ``auto`` VM floats over Nova's CPUs, i.e. it is
Partial-share most of the time; a VM the classifier found memory-bound is
kept All-share. So each side's samples need the VM *briefly in the other
mode*: :class:`ShareSampler` runs sampling windows ("trials"):

* a trial puts one ``auto`` VM into the other mode for ``window_passes``
  passes (All-share: every vCPU on the CPUs of a domain the plan left
  Empty and big enough; Partial-share: Nova's CPUs), then lets the plan
  restore it;
* CPI samples (per vCPU, per pass, from the agent's counters) are filed
  under the mode the VM's live pins were in; with ``min_samples`` on both
  sides one :func:`~nova_cacheaware.policy.memclass.classify` vote is
  taken (with its hysteresis) and the samples start again;
* LLC misses and instructions (where the host counts LLC misses) are
  added up per VM in either mode; every ``min_samples`` such samples a
  vote is taken too, so the classifier's MPKI rule decides when the CPI
  test abstains or has too few samples (and alone on a host that counts
  LLC misses but not cycles: no trial is then needed);
* rate limited: one trial at a time on the host, and a VM's next trial no
  sooner than ``interval_s`` after the end of its last one; VMs holding a
  domain in Placement, declared ones and unmovable ones are never tried.

Without counters (no PMU, or ``[agent] counters = False``) nothing is
sampled and no trial starts: the agent works on declared workloads.
:meth:`ShareSampler.to_dict` is what ``--dump-state`` shows of it.
"""

import collections
import dataclasses
import logging
import time

from nova_cacheaware.agent import decide
from nova_cacheaware.api import specs as api_specs
from nova_cacheaware.policy import memclass

LOG = logging.getLogger(__name__)

ALL, PARTIAL = 'all', 'partial'
#: Samples kept per VM and mode (the oldest are dropped).
MAX_SAMPLES = 256


@dataclasses.dataclass
class Trial:
    """One sampling window of one VM."""

    uuid: str
    mode: str
    domain: str = ''
    passes_left: int = 0


def share_mode(live, domains):
    """``all`` if every vCPU's CPUs lie in one domain, else ``partial``."""
    cpus = set()
    for pins in live.values():
        cpus |= set(pins)
    for domain in domains:
        if cpus and cpus <= set(domain['cpus']):
            return ALL
    return PARTIAL


class ShareSampler(object):
    """The agent's classifier of ``auto`` VMs (see the module docstring).

    :param domain_set: the host's cache domains (what All-share means).
    :param config: :class:`~nova_cacheaware.policy.memclass.\
ClassifierConfig`.
    :param window_passes: passes a trial lasts.
    :param interval_s: least time between two trials of one VM.
    :param clock: ``() -> seconds`` (monotonic).
    """

    def __init__(self, domain_set, config=None, window_passes=5,
                 interval_s=600.0, clock=time.monotonic):
        if window_passes < 1 or interval_s < 0:
            raise ValueError('window_passes >= 1 and interval_s >= 0')
        self.domains = [{'id': d.id, 'cpus': tuple(d.cpus)}
                        for d in domain_set.domains]
        self.config = config or memclass.ClassifierConfig()
        self.window_passes = window_passes
        self.interval_s = interval_s
        self.clock = clock
        self.states = {}     # uuid -> memclass.ClassifierState
        self.last = {}       # uuid -> the last memclass.Decision
        self.samples = {}    # uuid -> {mode: deque of CPI}
        self.misses = {}     # uuid -> [LLC misses, instructions, samples]
        self.cpi_seen = set()  # uuids with CPI samples: trials help them
        self.trial = None    # the running Trial
        self.trial_ended = {}  # uuid -> clock at the end of its last trial
        self.history = []    # (uuid, mode, domain) of every trial started
        self._seen = None    # the last snapshot sampled

    # -- helpers ----------------------------------------------------------

    @staticmethod
    def _auto(specs):
        return (specs or {}).get(api_specs.WORKLOAD,
                                 memclass.AUTO) == memclass.AUTO

    def memory_bound(self):
        """Uuids of ``auto`` VMs currently classified memory-bound."""
        return {u for u, s in self.states.items()
                if s.vm_class == memclass.MEMORY}

    # -- before planning: sample and classify -----------------------------

    def effective_specs(self, snapshot):
        """Record this pass's CPI samples, vote, return the planner's specs.

        The specs are the snapshot's, with VMs classified memory-bound
        declared ``memory``.
        """
        if snapshot is not self._seen:
            # Samples once per snapshot (--dump-state asks again).
            self._seen = snapshot
            self._record(snapshot)
        specs = dict(snapshot.specs)
        for uuid in self.memory_bound():
            specs[uuid] = dict(specs.get(uuid, {}),
                               **{api_specs.WORKLOAD: 'memory'})
        return specs

    def _record(self, snapshot):
        domains = self.domains
        present = {i.uuid for i in snapshot.instances}
        for gone in set(self.states) - present:
            self._forget(gone)
        for instance in snapshot.instances:
            if not self._auto(snapshot.specs.get(instance.uuid)):
                self._forget(instance.uuid)
                continue
            rows = [c for k, c in sorted(snapshot.counters.items())
                    if k.split('/')[0] == instance.uuid]
            cpis = [c['cpi'] for c in rows if 'cpi' in c]
            llc = [c for c in rows if 'llc_misses' in c]
            if not cpis and not llc:
                continue
            mode = share_mode(instance.live, domains)
            per = self.samples.setdefault(instance.uuid, {
                ALL: collections.deque(maxlen=MAX_SAMPLES),
                PARTIAL: collections.deque(maxlen=MAX_SAMPLES)})
            per[mode].extend(cpis)
            if cpis:
                self.cpi_seen.add(instance.uuid)
            acc = self.misses.setdefault(instance.uuid, [0, 0, 0])
            for c in llc:
                acc[0] += c['llc_misses']
                acc[1] += c['instructions']
                acc[2] += 1
            cpi_full = min(len(per[ALL]), len(per[PARTIAL])) >= \
                self.config.min_samples
            if cpi_full or acc[2] >= self.config.min_samples:
                self._vote(instance.uuid, per, cpi_full)

    def _vote(self, uuid, per, cpi_full):
        state = self.states.get(uuid, memclass.ClassifierState())
        misses, instructions, n = self.misses.pop(uuid, (0, 0, 0))
        result = memclass.classify(memclass.AUTO, state, memclass.Window(
            all_share_cpi=tuple(per[ALL]),
            partial_share_cpi=tuple(per[PARTIAL]),
            llc_misses=misses if n else None,
            instructions=instructions if n else None), self.config)
        if result.state.vm_class != state.vm_class:
            LOG.info('instance %s classified %s (%s: CPI test p=%s, '
                     'effect=%s, MPKI=%s)', uuid, result.state.vm_class,
                     result.source, result.p_value, result.effect,
                     result.mpki)
        self.states[uuid] = result.state
        self.last[uuid] = result
        if cpi_full:
            per[ALL].clear()
            per[PARTIAL].clear()

    def to_dict(self):
        """The classifier's state per VM, JSON-ready (``--dump-state``)."""
        return {uuid: {
            'class': state.vm_class,
            'last': (memclass.to_dict(self.last[uuid])
                     if uuid in self.last else None),
            'cpi_samples': {m: len(q) for m, q in sorted(
                self.samples.get(uuid, {}).items())},
            'llc_samples': self.misses.get(uuid, (0, 0, 0))[2],
        } for uuid, state in sorted(self.states.items())}

    def _forget(self, uuid):
        self.states.pop(uuid, None)
        self.samples.pop(uuid, None)
        self.misses.pop(uuid, None)
        self.cpi_seen.discard(uuid)
        self.last.pop(uuid, None)
        if self.trial is not None and self.trial.uuid == uuid:
            self.trial = None

    # -- after planning: trials -------------------------------------------

    def adjust(self, snapshot, plan_input, plan_output, decisions):
        """The decisions with the running trial's pins applied.

        Ends a trial after ``window_passes`` passes (the plan's own
        decision then restores the VM) and starts the next one when the
        host has none running.
        """
        by_uuid = {d.uuid: d for d in decisions}
        trial = self.trial
        if trial is not None:
            trial.passes_left -= 1
            if trial.passes_left <= 0 or trial.uuid not in by_uuid:
                self.trial_ended[trial.uuid] = self.clock()
                self.trial = None
        if self.trial is None:
            self.trial = self._next_trial(snapshot, plan_input, plan_output,
                                          by_uuid)
        if self.trial is None:
            return decisions
        return [self._apply(self.trial, d, plan_input)
                if d.uuid == self.trial.uuid else d for d in decisions]

    def _candidates(self, snapshot, by_uuid):
        for uuid in sorted(self.samples):
            decision = by_uuid.get(uuid)
            if uuid not in self.cpi_seen:
                continue      # MPKI only: no trial helps it
            if (decision is None or not decision.movable
                    or decision.reason.startswith('holds ')
                    or not self._auto(snapshot.specs.get(uuid))):
                continue
            ended = self.trial_ended.get(uuid)
            if ended is not None and self.clock() - ended < self.interval_s:
                continue
            yield decision

    def _next_trial(self, snapshot, plan_input, plan_output, by_uuid):
        domains = plan_input['domains']
        states = plan_output.get('domains', {})
        for decision in self._candidates(snapshot, by_uuid):
            per = self.samples[decision.uuid]
            now = share_mode(decision.desired, domains)
            want = PARTIAL if now == ALL else ALL
            if len(per[want]) >= self.config.min_samples:
                continue
            domain = ''
            if want == ALL:
                room = [d for d in domains
                        if states.get(d['id'], {}).get('state',
                                                       'empty') == 'empty'
                        and len(d['cpus']) >= len(decision.allowed)]
                if not room:
                    continue
                domain = room[0]['id']
            trial = Trial(decision.uuid, want, domain, self.window_passes)
            self.history.append((decision.uuid, want, domain))
            LOG.info('sampling %s %s-share for %d passes%s', decision.uuid,
                     want, self.window_passes,
                     ' in %s' % domain if domain else '')
            return trial
        return None

    @staticmethod
    def _apply(trial, decision, plan_input):
        if trial.mode == ALL:
            cpus = tuple(next(d['cpus'] for d in plan_input['domains']
                              if d['id'] == trial.domain))
            desired = {v: cpus for v in decision.allowed}
            domains, share = (trial.domain,), ALL
        else:
            desired = dict(decision.allowed)
            domains, share = (), PARTIAL
        return dataclasses.replace(
            decision, action=decide.REPIN, desired=desired, domains=domains,
            share=share, reason='sampling %s-share for the classifier'
                                % trial.mode)

"""Run-time classification of ``auto`` VMs: study 000's sampling step, pure.

Study 000 calls a VM memory-bound when its CPI while All-share (every vCPU
in one cache domain) and while Partial-share (spread over domains) differ
significantly. An ``auto`` VM floats over Nova's CPUs, i.e. it is
Partial-share most of the time; a VM the classifier found memory-bound is
kept All-share. So each side's samples need the VM *briefly in the other
mode*: :class:`Sampler` runs sampling windows ("trials"):

* a trial puts one ``auto`` VM into the other mode for ``window_passes``
  passes (All-share: every vCPU on the CPUs of a domain the plan left
  Empty and big enough; Partial-share: Nova's CPUs), then lets the plan
  restore it (:func:`with_trial` gives the VM the trial's pins instead of
  the plan's for those passes);
* CPI samples (per vCPU, per pass, from the agent's counters) are filed
  under the mode the VM's live pins were in; with ``min_samples`` on both
  sides one :func:`~nova_cacheaware.cachedomain.memclass.classify` vote is
  taken (with its hysteresis) and the samples start again;
* LLC misses and instructions (where the host counts LLC misses) are
  added up per VM in either mode; every ``min_samples`` such samples a
  vote is taken too, so the classifier's MPKI rule decides when the CPI
  test abstains or has too few samples (and alone on a host that counts
  LLC misses but not cycles: no trial is then needed);
* rate limited: one trial at a time on the host, and a VM's next trial no
  sooner than ``interval_s`` after the end of its last one; VMs holding a
  domain in Placement, declared ones and unmovable ones are never tried.

Pure: the time is an argument (``now``), the verdicts go to the planner as
a set of uuids (:meth:`Sampler.memory_bound`, the ``classified`` argument
of :func:`~.repinning.build_plan_input`), never as flavor extra specs.
The agent's :class:`~nova_cacheaware.cachedomain.sampling.ShareSampler`
feeds it once per pass and logs what changed.
"""

import collections
import dataclasses

from nova_cacheaware.cachedomain import memclass
from nova_cacheaware.cachedomain import repinning
from nova_cacheaware.contracts import cache_state
from nova_cacheaware.contracts import extra_specs

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
    """``all`` if every vCPU's CPUs lie in one domain, else ``partial``.

    ``domains``: objects with ``cpus`` (the ``plan`` domains).
    """
    cpus = set()
    for pins in live.values():
        cpus |= set(pins)
    for domain in domains:
        if cpus and cpus <= set(domain.cpus):
            return ALL
    return PARTIAL


def is_auto(specs):
    """True if the flavor leaves the workload to the classifier."""
    return (specs or {}).get(extra_specs.WORKLOAD,
                             memclass.AUTO) == memclass.AUTO


def with_trial(decisions, trial, domains):
    """``decisions`` with the trial's VM given the trial's pins.

    ``domains``: the ``plan`` domains (the All-share trial's CPUs are its
    domain's). No trial: the decisions as they are.
    """
    if trial is None:
        return decisions
    return [_trial_decision(trial, d, domains) if d.uuid == trial.uuid
            else d for d in decisions]


def _trial_decision(trial, decision, domains):
    if trial.mode == ALL:
        cpus = next(d.cpus for d in domains if d.id == trial.domain)
        desired = {v: cpus for v in decision.allowed}
        where, share = (trial.domain,), ALL
    else:
        desired = dict(decision.allowed)
        where, share = (), PARTIAL
    return dataclasses.replace(
        decision, action=repinning.REPIN, desired=desired, domains=where,
        share=share, reason='sampling %s-share for the classifier'
                            % trial.mode)


class Sampler:
    """The classifier of ``auto`` VMs (see the module docstring).

    :param domains: the host's cache domains (objects with ``cpus``: what
        All-share means for the samples).
    :param config: :class:`~nova_cacheaware.cachedomain.memclass.\
ClassifierConfig`.
    :param window_passes: passes a trial lasts.
    :param interval_s: least time between two trials of one VM.
    """

    def __init__(self, domains, config=None, window_passes=5,
                 interval_s=600.0):
        if window_passes < 1 or interval_s < 0:
            raise ValueError('window_passes >= 1 and interval_s >= 0')
        self.domains = tuple(domains)
        self.config = config or memclass.ClassifierConfig()
        self.window_passes = window_passes
        self.interval_s = interval_s
        self.states = {}     # uuid -> memclass.ClassifierState
        self.last = {}       # uuid -> the last memclass.Decision
        self.samples = {}    # uuid -> {mode: deque of CPI}
        self.misses = {}     # uuid -> [LLC misses, instructions, samples]
        self.cpi_seen = set()  # uuids with CPI samples: trials help them
        self.trial = None    # the running Trial
        self.trial_ended = {}  # uuid -> time at the end of its last trial
        self.history = []    # (uuid, mode, domain) of every trial started

    def memory_bound(self):
        """Uuids of ``auto`` VMs currently classified memory-bound."""
        return {u for u, s in self.states.items()
                if s.vm_class == memclass.MEMORY}

    def not_memory_bound(self):
        """Uuids of ``auto`` VMs currently classified not memory-bound."""
        return {u for u, s in self.states.items()
                if s.vm_class == memclass.OTHER}

    # -- before planning: sample and classify -----------------------------

    def record(self, instances, specs, counters):
        """File one pass's samples and vote; return the changed verdicts.

        ``counters``: ``{"<uuid>/<vcpu>": {"cpi": ..., "llc_misses": ...,
        "instructions": ...}}`` (the agent's derived counters). Returns
        ``[(uuid, memclass.Decision)]`` of the VMs whose class changed.
        """
        present = {i.uuid for i in instances}
        for gone in set(self.states) - present:
            self._forget(gone)
        changed = []
        for instance in instances:
            if not is_auto(specs.get(instance.uuid)):
                self._forget(instance.uuid)
                continue
            rows = [c for k, c in sorted(counters.items())
                    if k.split('/')[0] == instance.uuid]
            if self._file(instance, rows):
                changed.extend(self._maybe_vote(instance.uuid))
        return changed

    def _file(self, instance, rows):
        cpis = [c['cpi'] for c in rows if 'cpi' in c]
        llc = [c for c in rows if 'llc_misses' in c]
        if not cpis and not llc:
            return False
        mode = share_mode(instance.live, self.domains)
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
        return True

    def _maybe_vote(self, uuid):
        per = self.samples[uuid]
        cpi_full = min(len(per[ALL]), len(per[PARTIAL])) >= \
            self.config.min_samples
        if not (cpi_full or self.misses[uuid][2] >= self.config.min_samples):
            return []
        state = self.states.get(uuid, memclass.ClassifierState())
        misses, instructions, n = self.misses.pop(uuid, (0, 0, 0))
        result = memclass.classify(memclass.AUTO, state, memclass.Window(
            all_share_cpi=tuple(per[ALL]),
            partial_share_cpi=tuple(per[PARTIAL]),
            llc_misses=misses if n else None,
            instructions=instructions if n else None), self.config)
        self.states[uuid] = result.state
        self.last[uuid] = result
        if cpi_full:
            per[ALL].clear()
            per[PARTIAL].clear()
        if result.state.vm_class != state.vm_class:
            return [(uuid, result)]
        return []

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

    def step(self, decisions, plan_input, plan, specs, now):
        """The trial running this pass (None: none), after one more pass.

        Ends a trial after ``window_passes`` passes (the plan's own
        decision then restores the VM) and starts the next one when the
        host has none running. ``decisions``: the plan's
        :class:`~.repinning.Decision` list; ``specs``: the flavors'
        extra specs by uuid; ``now``: monotonic seconds.
        """
        by_uuid = {d.uuid: d for d in decisions}
        trial = self.trial
        if trial is not None:
            trial.passes_left -= 1
            if trial.passes_left <= 0 or trial.uuid not in by_uuid:
                self.trial_ended[trial.uuid] = now
                self.trial = None
        if self.trial is None:
            self.trial = self._next_trial(plan_input, plan, specs, now,
                                          by_uuid)
        return self.trial

    def _candidates(self, specs, now, by_uuid):
        for uuid in sorted(self.samples):
            decision = by_uuid.get(uuid)
            if uuid not in self.cpi_seen:
                continue      # MPKI only: no trial helps it
            if (decision is None or not decision.movable
                    or decision.reason.startswith('holds ')
                    or not is_auto(specs.get(uuid))):
                continue
            ended = self.trial_ended.get(uuid)
            if ended is not None and now - ended < self.interval_s:
                continue
            yield decision

    def _next_trial(self, plan_input, plan, specs, now, by_uuid):
        domains = plan_input.domains
        for decision in self._candidates(specs, now, by_uuid):
            per = self.samples[decision.uuid]
            current = share_mode(decision.desired, domains)
            want = PARTIAL if current == ALL else ALL
            if len(per[want]) >= self.config.min_samples:
                continue
            domain = ''
            if want == ALL:
                room = [d for d in domains
                        if _state(plan, d.id) == cache_state.EMPTY
                        and len(d.cpus) >= len(decision.allowed)]
                if not room:
                    continue
                domain = room[0].id
            self.history.append((decision.uuid, want, domain))
            return Trial(decision.uuid, want, domain, self.window_passes)
        return None


def _state(plan, domain_id):
    """The state the plan leaves a domain in (Empty when it says none)."""
    planned = plan.domains.get(domain_id)
    return planned.state if planned is not None else cache_state.EMPTY

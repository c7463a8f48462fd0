"""The policy gate: send a rendered stack to the sandbox-guard pack over Pulumi's analyzer protocol.

``run_check`` renders a stack offline (``render_stack``, exactly as ``sandboxkit preview``),
then makes the calls the Pulumi CLI makes to a policy pack: ``GetAnalyzerInfo``, ``Configure``
(schema defaults, then the per-environment file ``config/<environment>.json``), ``Analyze`` for
every resource and ``AnalyzeStack`` once. The pack answers either in-process (its servicer, the
default: fast) or as a real subprocess over gRPC (``pack_process``); the rules live only in the
pack. Results are source-agnostic ``Violation``s so other scanners join them before formatting
with ``format_text``, ``format_json`` or ``format_sarif``.

``check_stacks`` is the whole gate ``sandboxkit check`` runs: CrossGuard per stack, then checkov
once over every stack's exports (``checkov_bridge``), merged per stack with ``source: checkov``.
A checkov failure the baseline does not accept takes its level from
``policy-packs/checkov/levels.json`` (per environment, like the pack config; ``project`` for the
kit's own Dockerfiles and workflows, which are scanned only when asked: ``--all-stacks``).
Baseline-accepted failures are kept apart (``CheckResult.accepted``) with their reason.

One module per job, each importing only those above it in this list:

- ``results``: ``RuleInfo``, ``Violation``, ``CheckResult``, ``BadFile``, ``exit_code``.
- ``analyzer``: the transport (``InProcessAnalyzer``, ``pack_process``) and the protocol's enums.
- ``pack_config``: reading and reconciling a pack config file.
- ``locations``: the stack-file line where a finding is fixed.
- ``crossguard``: the pack over one rendered stack (``check_rendered``, ``run_check``).
- ``checkov_merge``: checkov's verdicts into results, at the levels of ``levels.json``.
- ``check``: the whole gate (``check_stacks``; ``check_stack_files`` renders first, checkov's
  process starting meanwhile, after ``preflight`` named every missing tool at once;
  ``check_each_stack_file`` judges every stack that loads and names
  each one that does not).
- ``formats``: ``text``, ``json_document`` and ``sarif``; nothing above imports them.
"""

from sandboxkit.gate.analyzer import (
    Analyzer,
    InProcessAnalyzer,
    load_policies,
    pack_dir,
    pack_process,
)
from sandboxkit.gate.check import (
    MissingToolsError,
    check_each_stack_file,
    check_stack_files,
    check_stacks,
    preflight,
)
from sandboxkit.gate.crossguard import check_rendered, run_check
from sandboxkit.gate.formats.json_document import format_json
from sandboxkit.gate.formats.sarif import format_sarif
from sandboxkit.gate.formats.text import format_text
from sandboxkit.gate.pack_config import environment_config_path, policy_config, stack_pack_config
from sandboxkit.gate.results import (
    PROJECT_SCOPE,
    BadFile,
    CheckResult,
    RuleInfo,
    Violation,
    exit_code,
)

__all__ = [
    "PROJECT_SCOPE",
    "Analyzer",
    "BadFile",
    "CheckResult",
    "InProcessAnalyzer",
    "MissingToolsError",
    "RuleInfo",
    "Violation",
    "check_each_stack_file",
    "check_rendered",
    "check_stack_files",
    "check_stacks",
    "environment_config_path",
    "exit_code",
    "format_json",
    "format_sarif",
    "format_text",
    "load_policies",
    "pack_dir",
    "pack_process",
    "policy_config",
    "preflight",
    "run_check",
    "stack_pack_config",
]

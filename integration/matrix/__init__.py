"""The compatibility matrix: every (compiler, runtime, ep) combination of released wheels and HEAD.

    python integration/matrix [--cache build/matrix] [--gpu auto|cuda|none] [--no-replay] [--no-example]
                                 [--jobs N] [--pack-offline DIR]
    python integration/matrix --offline DIR [--gpu cuda] [--jobs N] [--cache DIR]   (no registry, uv or git)

1. Finds every release of each wheel in HEAD's history (``tools/release/release.py``: by tag, else by the
   ``Release <package> <version>`` commit) plus HEAD itself (the working tree), and builds each
   wheel once: from the working tree, or from a ``git archive`` of the release commit. Wheels are
   cached under ``<cache>/wheels`` by package and content (the git tree of what the wheel is built
   from), so a release is built once per cache and HEAD again only when its sources change.
2. Works out each combination's expected outcome from the wheels' own metadata: whether pip can
   install them together (the EP's and the compiler's ``Requires-Dist`` pins), whether the ABIs
   agree (the runtime's ABI from its manifest, the ABI the EP was built for, the ABI major and
   newest minor the compiler targets), and so which ABI minor the code will target.
3. Installs each combination into a fresh virtual environment (uv; our wheels with ``--no-index
   --find-links``, onnxruntime, onnx, numpy and the compiler's dependencies from the registry,
   cached by uv) and runs ``matrix_cell.py`` there: dynamic- and fixed-shape models through
   onnxruntime against its CPU EP, a refused feed, and EPContext models written by this cell; then
   every cell loads the EPContext models every other cell wrote.
4. Replays the original regression (unless ``--no-replay``): HEAD's runtime wheel with
   ``hipdnn_ep_get_host_scratch_base`` no longer exported, and with ``hipdnn_ep_get_pool_base``'s
   size parameter dropped from its manifest, each claiming to be an ordinary runtime; the matrix
   must report their cells as refused or failed, never as passed.

5. Builds the downstream example (examples/custom_kernels) against every runtime wheel (cached per
   wheel content and example source) and runs each build beside every runtime of the leg, in a
   cell's environment (``example_cell.py``); a run with a runtime older than the header it was built
   with must be refused by the example's own check, with its message.

Compatible cells must pass every test; incompatible ones must be refused by pip or by our own
check with its documented message (a clear error naming the fix). A link error, an undefined
symbol, a crash or a wrong result fails the matrix. The table (markdown) goes to stdout and to
``<cache>/matrix.md``; the exit status is 1 when any cell differs from its expectation. With a
GPU (``nvidia-smi`` answers, or ``--gpu cuda``) the same cells run again on the cuda backend,
with runtime wheels built with ``HIPDNN_EP_BACKENDS="cpu;cuda"``; without one that leg is skipped.

Offline (a GPU machine with no registry, uv or git, and maybe another Python): ``--pack-offline DIR``
writes, after the CPU leg, the runtime's sources at each release and HEAD, the compiler and EP
wheels and every CPU cell's EPContext models; ``--offline DIR`` there builds each runtime from its
sources with that machine's Python and runs each cell on the EPContext models its combination
compiled here (compiling needs torch-mlir), then the cross-loads and the example.
"""

from __future__ import annotations

from .cells import (
    CONTEXT_MODELS_SKIPPED,
    Cell,
    _context_abi,
    _dynamic_fixed,
    _parallel,
    _uv,
    cell_verdict,
    context_models,
    cross_loads,
    details,
    install,
    installed_differs,
    reader,
    run_cell_script,
    run_matrix,
    table,
    writer,
)
from .cli import main
from .common import BUILT_FROM, CELL, EXAMPLE, EXAMPLE_CELL, NAMES, ROOT, TEST_DEPS, THIRD_PARTY
from .example import (
    ExampleBuild,
    _example_key,
    build_example,
    example_actual,
    example_build_expected,
    example_needs,
    example_ok,
    example_run_expected,
    example_table,
    run_example,
)
from .expect import Expected, _requirement, expect
from .offline import (
    OfflineInstaller,
    _link,
    _tree_digest,
    build_runtime_offline,
    offline_leg,
    pack_offline,
    pip_conflicts,
)
from .replay import POOL_PARAMS, POOL_PARAMS_NARROWED, SCRATCH, _edit_library, _manifest_json, replayed_runtime
from .wheels import Builder, Source, Wheel, _git, _key, fetch_third_party, read_wheel, sources, working_tree

__all__ = [
    'BUILT_FROM', 'Builder', 'CELL', 'CONTEXT_MODELS_SKIPPED', 'Cell', 'EXAMPLE', 'EXAMPLE_CELL', 'ExampleBuild',
    'Expected', 'NAMES', 'OfflineInstaller', 'POOL_PARAMS', 'POOL_PARAMS_NARROWED', 'ROOT', 'SCRATCH', 'Source',
    'TEST_DEPS', 'THIRD_PARTY', 'Wheel', '_context_abi', '_dynamic_fixed', '_edit_library', '_example_key', '_git',
    '_key', '_link', '_manifest_json', '_parallel', '_requirement', '_tree_digest', '_uv', 'build_example',
    'build_runtime_offline', 'cell_verdict', 'context_models', 'cross_loads', 'details', 'example_actual',
    'example_build_expected', 'example_needs', 'example_ok', 'example_run_expected', 'example_table', 'expect',
    'fetch_third_party', 'install', 'installed_differs', 'main', 'offline_leg', 'pack_offline', 'pip_conflicts',
    'read_wheel', 'reader', 'replayed_runtime', 'run_cell_script', 'run_example', 'run_matrix', 'sources', 'table',
    'working_tree', 'writer'
]

"""The bundled phase A tools: the eight named by the recipe map, and the file manifest the
Archive Snapshot and Post-Mortem loops read."""

from controlroom.tools.builtin.canon_checker import CanonChecker
from controlroom.tools.builtin.consistency_checker import ConsistencyChecker
from controlroom.tools.builtin.file_locator import FileLocator
from controlroom.tools.builtin.file_manifest import FileManifest
from controlroom.tools.builtin.outline_analyzer import OutlineAnalyzer
from controlroom.tools.builtin.prose_analyzer import ProseAnalyzer
from controlroom.tools.builtin.reader_experience import ReaderExperienceSimulator
from controlroom.tools.builtin.scene_draft_validator import SceneDraftValidator
from controlroom.tools.builtin.stakes_mapper import StakesMapper

BUILTIN_TOOLS = (
    FileLocator,
    OutlineAnalyzer,
    CanonChecker,
    ConsistencyChecker,
    ProseAnalyzer,
    StakesMapper,
    ReaderExperienceSimulator,
    SceneDraftValidator,
    FileManifest,
)

"""The eight bundled phase A tools named by the recipe map."""

from tools.builtin.canon_checker import CanonChecker
from tools.builtin.consistency_checker import ConsistencyChecker
from tools.builtin.file_locator import FileLocator
from tools.builtin.outline_analyzer import OutlineAnalyzer
from tools.builtin.prose_analyzer import ProseAnalyzer
from tools.builtin.reader_experience import ReaderExperienceSimulator
from tools.builtin.scene_draft_validator import SceneDraftValidator
from tools.builtin.stakes_mapper import StakesMapper

BUILTIN_TOOLS = (
    FileLocator,
    OutlineAnalyzer,
    CanonChecker,
    ConsistencyChecker,
    ProseAnalyzer,
    StakesMapper,
    ReaderExperienceSimulator,
    SceneDraftValidator,
)

"""The eight bundled phase A tools named by the recipe map."""

from controlroom.tools.builtin.canon_checker import CanonChecker
from controlroom.tools.builtin.consistency_checker import ConsistencyChecker
from controlroom.tools.builtin.file_locator import FileLocator
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
)

"""Prompt-injection score for inputs (the contract text a user sends), offline: rules and a learned model.

`injection_score(text)` is the one entry point; the canary eval and the gateway's guard both call it.
It combines independent signals, 1 - Π(1 - w), so more evidence never lowers the score and one strong
signal alone already scores ≥ 0.5. Signals are independent only if they read different things, so the
attacks' names are read by one side alone:

- Structural rules (below): the forms of an attack. Each rule's weight is roughly how sure we are that the
  phrase is an attack and not contract language: phrases no contract contains ("ignore the previous
  instructions", chat-template tokens, "print your system prompt") weigh 0.7-0.9, phrases a contract may
  contain innocently ("act as", "扮演") weigh 0.3-0.4, so they only count together with something else.
- Vocabulary rules (`topic=True`): the attacks' names ("system prompt", "developer mode", "jailbreak",
  "DAN", 系统提示, 越狱), which benign text about security uses as often as an attack does. They count only
  when the model alone scores the text at least TOPIC_GATE (0.8), i.e. when it sees an instruction to the
  assistant there, and then raise its score; otherwise they are listed at weight 0. Alone, or with a weak
  model score, they never reach the threshold.
- The classifier (`injection_model`): a logistic regression on hashed character and word n-grams,
  trained on a generated corpus of the published attack classes in Chinese and English
  (data/injection/README.md), scored per window of the text (the best window counts, so an instruction
  hidden in a long document is judged on its own) and calibrated (Platt) so that its 0.8 means about
  80% of calibration windows scoring there were injections. It never reads the vocabulary rules' words
  (`injection_model.TOPIC_WORDS` are deleted before its features, in training too), so its score and a
  vocabulary rule are separate evidence, not one word counted twice (before, "Our system prompt
  guidelines are reviewed quarterly" scored 0.998). It is listed as the signal `model.classifier` when it
  reaches MODEL_FLOOR; below, a benign text keeps the score the rules give it. It catches the
  paraphrases, layouts and encodings the rules do not name; the structural rules keep what they catch
  exactly, whatever the model says.

Limits: both read surface form. Languages other than Chinese and English, attacks spread thin over many
windows, and wordings far from the corpus's classes get past them, and neither judges intent. Where that
matters, configure a local Hugging Face text-classification model (for example a DeBERTa prompt-injection
classifier) and use `InjectionClassifier`; it is loaded lazily, only when a path is set.

Text is normalized first: NFKC (full-width letters, ligatures), lowercase, whitespace collapsed;
invisible characters (zero-width, bidi controls, Unicode tag characters) are removed so they cannot
split a keyword, and counted as a signal of their own. Chinese rules also see a copy with all
whitespace removed; the classifier also folds Cyrillic and Greek look-alike letters into Latin ones.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ai_platform.detectors import injection_model

# Zero-width and joiner characters, BOM, word joiner, bidi controls, Unicode tags.
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")


@dataclass(frozen=True)
class Rule:
    name: str  # "<family>.<detail>"
    weight: float
    pattern: re.Pattern[str]
    view: str = "spaced"  # which normalized view it searches: spaced, compact (no whitespace) or raw (NFKC, case kept)
    topic: bool = False  # a vocabulary rule: counts only when the model sees an instruction (TOPIC_GATE)


def _en(name: str, weight: float, pattern: str) -> Rule:
    return Rule(name, weight, re.compile(pattern, re.MULTILINE))


def _zh(name: str, weight: float, pattern: str) -> Rule:
    return Rule(name, weight, re.compile(pattern), view="compact")


def _topic(name: str, weight: float) -> Rule:
    """A vocabulary rule on one of the model's TOPIC_WORDS (the model itself never reads them)."""
    alternatives = injection_model.TOPIC_WORDS[name]
    if name.startswith("zh_"):
        return Rule(f"role.{name}", weight, re.compile("|".join(alternatives)), view="compact", topic=True)
    return Rule(f"role.{name}", weight, re.compile("|".join(rf"\b{a}" for a in alternatives)), topic=True)


_EARLIER = r"(?:previous|prior|above|preceding|earlier|foregoing|original|initial|system|developer)"
_ORDERS = r"(?:instructions?|prompts?|rules|directions|guidelines|directives|messages?|context|commands?)"
_SAY = r"(?:say|print|type|write|output|repeat|reply|respond|answer|state)"
_ZH_EARLIER = r"(?:以上|之前|前面|上面|上述|先前|此前|原有|原来|原先|所有|全部|一切|你的|系统)"
_ZH_ORDERS = r"(?:指令|指示|要求|规则|提示词?|设定|命令|约束)"

RULES: tuple[Rule, ...] = (
    # Instruction override: the classic attack, never contract language.
    _en(
        "override.ignore",
        0.85,
        rf"\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:all\s+|any\s+|every\s+)?(?:of\s+)?"
        # "my earlier message(s)" is a person correcting an e-mail, not an attack; "my previous instructions" is.
        rf"(?:the\s+|your\s+|these\s+|those\s+|my\s+(?!{_EARLIER}\s+messages?\b))?{_EARLIER}\s+{_ORDERS}",
    ),
    _en(
        "override.everything",
        0.7,
        rf"\b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:{_ORDERS}|you\s+(?:were|have\s+been)\s+told)",
    ),
    _en(
        "override.new_instructions",
        0.5,
        r"\bnew\s+instructions?\s*:|\binstead,?\s+(?:do|follow)\s+(?:this|these|the\s+following)\b",
    ),
    _zh(
        "override.zh_ignore",
        0.85,
        rf"(?:忽略|无视|忽视|忘记|忘掉|不要理会|不用理会|不必理会|跳过)掉?{_ZH_EARLIER}的?(?:所有|全部|一切)?的?{_ZH_ORDERS}",
    ),
    # "不要遵守" alone; softer verbs ("无需遵守", "停止执行") are contract language unless aimed at instructions.
    _zh(
        "override.zh_disobey",
        0.7,
        rf"不要再?(?:遵守|遵循|听从|服从)|(?:不必|无需|不用|停止)再?(?:遵守|遵循|听从|服从|执行){_ZH_EARLIER}的?{_ZH_ORDERS}",
    ),
    # Role / system hijack: tries to replace the reviewer persona.
    _en(
        "role.you_are_now", 0.6, r"\byou\s+are\s+now\b|\bfrom\s+now\s+on,?\s+you\b|\bpretend\s+(?:to\s+be|you\s+are)\b"
    ),
    _en("role.act_as", 0.3, r"\b(?:act|behave)\s+as\s+(?:an?\s+|my\s+)?(?!agent\b|the\s+agent\b)\w+"),
    # Vocabulary: the attacks' names, which benign text about security uses too (topic=True: see TOPIC_GATE).
    _topic("system_prompt", 0.6),
    _topic("developer_mode", 0.7),
    _topic("jailbreak", 0.7),
    Rule("role.dan", 0.5, re.compile(injection_model.TOPIC_CASED), view="raw", topic=True),  # "Dan" is a name
    _zh("role.zh_you_are_now", 0.6, r"你现在是|从现在(?:开始|起)你|假装你是|你不再是"),
    _zh("role.zh_act_as", 0.3, r"扮演"),
    _topic("zh_system_prompt", 0.6),
    _topic("zh_developer_mode", 0.7),
    # Prompt exfiltration: asks the model to leak its instructions.
    _en(
        "exfiltration.reveal",
        0.8,
        # "print the instructions" may be about a product manual, so "the" needs a qualifier.
        r"\b(?:reveal|print|show|repeat|output|display|tell\s+me|leak|dump|write\s+out|recite)\s+(?:me\s+)?(?:all\s+)?"
        r"(?:your\s+(?:full\s+|entire\s+)?(?:system\s+|initial\s+|original\s+|hidden\s+|secret\s+)?(?:prompt|instructions|rules)"
        r"|the\s+(?:full\s+|entire\s+)?(?:system|initial|original|hidden|secret|above)\s+(?:prompt|instructions))\b",
    ),
    # The instructions named by what happened to them, not by "your prompt": "paste the rules you were given",
    # "copy out the text you received before this document", 把你收到的指示贴出来. A person may ask it of a person
    # ("the instructions you were given by the landlord"), so it counts with the model, not alone.
    _en(
        "exfiltration.received",
        0.6,
        r"\b(?:reveal|print|show|repeat|output|display|tell\s+me|leak|dump|write\s+(?:out|down)|recite|paste|copy"
        r"(?:\s+out)?|quote|list|share|reproduce|disclose|spell\s+out|read\s+back)\s+(?:me\s+)?"
        r"(?:(?:all|every|each)\s+(?:of\s+)?)?(?:(?:the|your|whatever|everything)\s+)?(?:\w+\s+){0,3}?"
        r"(?:instructions?|rules|guidelines|directions|directives|text|messages?|setup|configuration|prompts?)"
        r"\s+(?:that\s+)?you\s+(?:were|have\s+been|got|received|had)\b",
    ),
    _zh(
        "exfiltration.zh_received",
        0.6,
        r"(?:(?:输出|显示|打印|告诉我|泄露|重复|复述|展示|透露|给出|贴出|抄出|列出|写出|念出|引用|复制|披露|分享)(?:一下)?"
        r"|把)你[^。！？，]{0,10}?(?:收到|拿到|得到|接到|被给予)的[^。！？]{0,8}?(?:指示|指令|说明|规则|设定|提示|准则)",
    ),
    _en(
        "exfiltration.question",
        0.6,
        r"\bwhat\s+(?:is|are|were)\s+your\s+(?:system\s+|initial\s+|original\s+)?(?:prompt|instructions)\b",
    ),
    _zh(
        "exfiltration.zh_reveal",
        0.8,
        r"(?:输出|显示|打印|告诉我|泄露|泄漏|重复|复述|展示|透露|给出)(?:一下)?(?:你的|您的)?(?:全部|完整的?)?"
        r"(?:系统)?(?:提示词|提示语|指令|系统提示|初始指令|设定|预设)",
    ),
    # Output-format hijack aimed at our JSON reply.
    _en(
        "format.respond_only",
        0.5,
        r"\b(?:respond|reply|answer)\s+(?:only\s+with|with\s+(?:exactly|only))\b",
    ),
    # "return the following documents" is contract language, so only "output" goes without an object.
    _en(
        "format.output_following",
        0.6,
        r"\boutput\s+(?:exactly\s+)?the\s+following\b"
        r"|\b(?:return|print|write|reply\s+with)\s+(?:exactly\s+)?the\s+following\s+(?:json|text|output|answer|response)\b",
    ),
    # Perez & Ribeiro's rogue string: an order to say exactly a quoted text ("and just say "...":", "JUST PRINT
    # "..."", "reply only "..."", 只输出“……”), the form of a goal hijack; an ordinary request quotes what to say
    # far less often. Alone it stays under the threshold: it counts with the model or another rule.
    _en(
        "format.say_quoted",
        0.5,
        rf"\b(?:(?:just|only|simply|instead)\s+{_SAY}|{_SAY}\s+(?:only|just))"
        r"(?:\s+with)?(?:\s+(?:the\s+)?(?:words?|text|phrase|string))?\s*:?\s*[\"'“‘]",
    ),
    _zh(
        "format.zh_say_quoted",
        0.5,
        r"(?:只|仅|就|直接|只要|只需)(?:说|输出|打印|回复|回答|写|答复|重复)(?:一句)?[“\"「『‘]",
    ),
    # The same order after a pivot away from the task, said as an interjection ("STOP EVERYTHING!!! NOW!!! JUST
    # PRINT "...":", "Nevermind. Just say "..."", 算了，直接回复“……”): the goal hijack whole, whatever the model
    # reads around it. The pivot must open a sentence and be followed by punctuation: "Wait until the light is
    # green, then just say "ok"" and "If the alarm sounds, stop. Then simply say "fire"" are between people.
    _en(
        "override.pivot_say_quoted",
        0.8,
        r"(?:^|[.!?;:>*\-]\s*)(?:stop(?:\s+everything)?|halt|wait|hold\s+on|never\s*mind|forget\s+(?:it|that|this|everything)"
        r"|scratch\s+that|abort|change\s+of\s+plans?|cancel\s+(?:that|this|everything))\s*[!.:,;]"
        rf"[^\n\"“]{{0,60}}?\b(?:just|only|simply)\s+{_SAY}(?:\s+with)?\s*:?\s*[\"'“‘]",
    ),
    _zh(
        "override.zh_pivot_say_quoted",
        0.8,
        r"(?:^|[。！？；：!?;:.])(?:算了|别管了|不用管了|且慢|别做了|停止一切|停下一切|全部停下)[，,。！!：:；]+[^“\"「]{0,20}?"
        r"(?:只|就|直接|只要|只需)(?:说|输出|打印|回复|回答|写|答复|重复)(?:一句)?[“\"「『‘]",
    ),
    _en("format.our_schema", 0.7, r"risk_points[\"']?\s*:\s*\["),  # the reply's own key, inside the input
    _zh("format.zh_output_following", 0.6, r"(?:输出|返回|回复|打印)(?:以下|下面|如下)的?(?:内容|json|文字|结果)"),
    _zh("format.zh_only_output", 0.5, r"(?:只|仅)(?:需|能|可以|允许)?输出"),  # not 返回: "仅返回押金"
    # Delimiters faking chat turns: chat-template tokens have no business in a contract.
    _en(
        "delimiter.chat_token", 0.8, r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>"
    ),
    _en("delimiter.inst", 0.7, r"\[/?inst\]|<</?sys>>"),
    _en(
        "delimiter.role_header",
        0.6,
        r"^\s*#{2,}\s*(?:system|assistant|user|instructions?)\s*:?\s*$|^\s*#{2,}\s*(?:system|assistant)\s*:",
    ),
    _en("delimiter.role_line", 0.3, r"^\s*(?:system|assistant)\s*:"),
    _en("delimiter.xml_role", 0.5, r"</?(?:system|instructions?|assistant)>"),
    # Hidden content: places to smuggle instructions or exfiltrate data.
    _en("hidden.html_comment", 0.5, r"<!--.*?-->"),
    _en("hidden.markdown_image_url", 0.6, r"!\[[^\]]*\]\(\s*(?:https?:)?//"),
    _en("hidden.url_with_data", 0.4, r"https?://\S+[?&]\w+=\{"),
)

# Each rule's pattern with every word boundary (\b) taken out: it matches wherever the rule does (an assertion
# removed only loosens a pattern) and more, so a text it does not match is one the rule cannot match, and the rule
# is searched only where it does. Without a leading \b a pattern starts with literals, which the regex engine
# skips ahead to; with one it tries every position of the text: the rules took 1.2 ms per 4 KB, 0.6 with this.
_PREFILTERS = tuple(re.compile(rule.pattern.pattern.replace(r"\b", ""), rule.pattern.flags) for rule in RULES)

# Below this the classifier's opinion is not listed (nor counted): a benign text keeps a score of 0.
MODEL_FLOOR = 0.2
# A vocabulary rule (topic=True) counts only when the model, which never reads the topic words, scores the text
# at least this, the calibrated level at which the model alone calls it an injection. A topic word says what an
# instruction is about, not that there is one: it sharpens the model's verdict, it never makes one. Below, the
# rule is listed at weight 0 ("developer mode" in a router manual is a topic, not an attack). A lower gate (0.5,
# "more likely than not") let a weak model score and a topic word flag prose about security: that prose is
# itself half-way instruction-like to the model (rules, guidelines, settings), so the two are not independent.
TOPIC_GATE = 0.8

_BASE64 = re.compile(r"[A-Za-z0-9+/]{40,}={0,2}")


def normalize(text: str) -> tuple[str, int]:
    """NFKC, invisible characters removed (and counted), lowercased, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text)
    hidden = len(_INVISIBLE.findall(text))
    text = _INVISIBLE.sub("", text)
    return re.sub(r"[^\S\n]+", " ", text.lower()), hidden


def _base64_blobs(raw: str) -> list[str]:
    """Decoded text of long base64 runs that look encoded (mixed classes) and decode to UTF-8."""
    decoded = []
    for blob in _BASE64.findall(raw):
        classes = sum(bool(re.search(p, blob)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
        if classes < 3:  # a long word or a hex digest is not base64 smuggling
            continue
        try:
            decoded.append(base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True).decode("utf-8"))
        except (binascii.Error, ValueError):
            decoded.append("")
    return decoded


def injection_signals(text: str) -> list[tuple[str, float]]:
    """The rules that fire on `text` and the model's score, each once, as (name, weight), strongest first; a
    vocabulary rule whose text the model does not read as an instruction is listed with weight 0."""
    return sorted(_signals(text, depth=0).items(), key=lambda s: (-s[1], s[0]))


def _signals(text: str, depth: int) -> dict[str, float]:
    # NFKC once: it is idempotent, and normalize() and the model's prepare() apply it again to an already
    # normalized text at almost no cost (0.004 ms per 4 KB, 0.12 on the text as sent).
    text = unicodedata.normalize("NFKC", text)
    spaced, hidden = normalize(text)
    raw = _INVISIBLE.sub("", text)
    views = {"spaced": spaced, "compact": re.sub(r"\s+", "", spaced), "raw": raw}
    model = injection_model.shipped().score(text)
    found = {
        rule.name: 0.0 if rule.topic and model < TOPIC_GATE else rule.weight
        for rule, prefilter in zip(RULES, _PREFILTERS, strict=True)
        if prefilter.search(views[rule.view]) and rule.pattern.search(views[rule.view])
    }
    if hidden:
        # A stray BOM or ZWSP from copy-paste is common; many are not.
        found["hidden.invisible_chars"] = 0.6 if hidden >= 3 else 0.3
    if model >= MODEL_FLOOR:
        found["model.classifier"] = round(model, 6)
    blobs = _base64_blobs(views["raw"])
    if blobs:
        found["hidden.base64_blob"] = 0.5
        if depth == 0:  # what the blob says counts too, one level deep
            for blob in blobs:
                for name, weight in _signals(blob, depth=1).items():
                    found.setdefault(f"base64.{name}", weight)
    return found


def combine(weights: list[float]) -> float:
    remaining = 1.0
    for weight in weights:
        remaining *= 1.0 - weight
    return 1.0 - remaining


def injection_score(text: str) -> float:
    """In [0, 1]: 1 - Π(1 - w) over the signals (a vocabulary rule below TOPIC_GATE weighs 0)."""
    return round(combine([weight for _, weight in injection_signals(text)]), 6)


class InjectionClassifier:
    """A stronger, optional check: a local Hugging Face text-classification model.

    `transformers` is imported only in `from_path`, so importing this module
    stays cheap; nothing is downloaded (the folder must hold the model).
    """

    # Labels that mean "not an injection" in common prompt-injection classifiers.
    BENIGN_LABELS = frozenset({"safe", "benign", "legit", "legitimate", "label_0", "0", "negative", "normal"})

    def __init__(self, pipeline: Any) -> None:
        self._pipeline = pipeline

    @classmethod
    def from_path(cls, path: str | Path) -> InjectionClassifier:
        from ai_platform.errors import DetectorModelError

        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise DetectorModelError(f"{folder}: not a Hugging Face model folder (no config.json)")
        from transformers import pipeline  # heavy: only when a model is configured

        return cls(pipeline("text-classification", model=str(folder), tokenizer=str(folder), top_k=None))

    def score(self, text: str) -> float:
        """Probability mass on the non-benign labels."""
        scores = self._pipeline(text, truncation=True)
        if scores and isinstance(scores[0], list):  # batched shape
            scores = scores[0]
        return float(sum(s["score"] for s in scores if str(s["label"]).lower() not in self.BENIGN_LABELS))

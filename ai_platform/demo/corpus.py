"""Synthetic contract-review pairs, Chinese and English, from a seeded generator.

Each contract is a few clauses. A clause is either a risky variant (which the
reviewer must report as a risk point) or a safe variant (which it must not).
The expected answer lists one risk point per risky clause, in clause order, in
the `contract_review` output shape. Everything derives from `random.Random(seed)`
so the same seed gives the same texts on every machine.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

LEVELS = ("高", "中", "低")


@dataclass(frozen=True)
class Risk:
    point: str
    level: str
    basis: str
    suggestion: str
    keyword: str  # what an eval case expects the answer to mention

    def as_json(self) -> dict[str, str]:
        return {"point": self.point, "level": self.level, "basis": self.basis, "suggestion": self.suggestion}


@dataclass(frozen=True)
class ClauseKind:
    name: str
    risky_zh: tuple[str, ...]
    safe_zh: tuple[str, ...]
    risky_en: tuple[str, ...]
    safe_en: tuple[str, ...]
    risk_zh: Risk
    risk_en: Risk


CLAUSES: tuple[ClauseKind, ...] = (
    ClauseKind(
        "payment",
        ("乙方交付后，甲方视资金情况付款。", "甲方应在方便时支付合同价款{amount}元。"),
        ("甲方应于验收合格后{days}日内支付合同价款{amount}元。", "合同价款{amount}元，甲方于每月{days}日前支付。"),
        (
            "The Buyer shall pay when funds permit.",
            "The Buyer may pay the price of {amount} yuan at a convenient time.",
        ),
        ("The Buyer shall pay {amount} yuan within {days} days after acceptance.",),
        Risk("付款期限不明确", "高", "民法典第五百一十一条", "明确付款期限和方式", "付款"),
        Risk("Payment term undefined", "高", "Civil Code Art. 511", "Specify the payment deadline", "Payment"),
    ),
    ClauseKind(
        "penalty",
        ("任何一方违约，应向对方支付合同总额{pct}%的违约金。", "乙方逾期一日，按合同总额{pct}%支付违约金。"),
        ("违约方应赔偿守约方因此遭受的实际损失。",),
        ("The breaching party shall pay liquidated damages of {pct}% of the contract price.",),
        ("The breaching party shall compensate the actual losses of the other party.",),
        Risk("违约金过高", "中", "民法典第五百八十五条", "将违约金调整至实际损失的百分之三十以内", "违约金"),
        Risk("Excessive liquidated damages", "中", "Civil Code Art. 585", "Cap damages near actual loss", "damages"),
    ),
    ClauseKind(
        "confidentiality",
        ("双方可自由使用和披露在合作中获得的对方信息。",),
        ("双方对在合作中获得的对方商业秘密负有保密义务，期限为{years}年。",),
        ("Either party may freely disclose information received from the other party.",),
        ("Each party shall keep the other party's trade secrets confidential for {years} years.",),
        Risk("保密义务缺失", "中", "民法典第五百零一条", "增加保密条款及违约责任", "保密"),
        Risk("No confidentiality duty", "中", "Civil Code Art. 501", "Add a confidentiality clause", "confidential"),
    ),
    ClauseKind(
        "termination",
        ("甲方可随时解除本合同且无需承担任何责任。", "乙方无权解除合同，甲方可随时解除。"),
        ("任何一方严重违约且经催告后{days}日内未改正的，对方可解除合同。",),
        ("The Buyer may terminate this contract at any time without any liability.",),
        ("Either party may terminate if a material breach is not cured within {days} days of notice.",),
        Risk("单方解除权不对等", "高", "民法典第五百六十二条", "约定双方对等的解除条件", "解除"),
        Risk("One-sided termination right", "高", "Civil Code Art. 562", "Make termination rights mutual", "terminat"),
    ),
    ClauseKind(
        "jurisdiction",
        ("发生争议的，双方协商解决。",),
        ("因本合同引起的争议，提交{city}仲裁委员会仲裁。", "因本合同引起的争议，由{city}人民法院管辖。"),
        ("Disputes shall be settled through negotiation.",),
        ("Any dispute shall be submitted to the {city} Arbitration Commission.",),
        Risk("争议解决约定不明", "低", "民事诉讼法第三十五条", "明确约定管辖法院或仲裁机构", "争议"),
        Risk(
            "Unclear dispute resolution",
            "低",
            "Civil Procedure Law Art. 35",
            "Name a court or arbitration body",
            "dispute",
        ),
    ),
    ClauseKind(
        "ip",
        ("项目成果的知识产权归属另行商定。",),
        ("项目成果的知识产权归甲方所有，乙方保留署名权。",),
        ("Ownership of the deliverables shall be agreed separately.",),
        ("All intellectual property in the deliverables belongs to the Buyer.",),
        Risk("知识产权归属不明", "中", "民法典第八百四十三条", "明确成果知识产权归属", "知识产权"),
        Risk("IP ownership unclear", "中", "Civil Code Art. 843", "State who owns the deliverables", "IP"),
    ),
    ClauseKind(
        "exemption",
        ("乙方对产品的任何缺陷均不承担责任。", "因乙方原因造成的人身损害，乙方不承担责任。"),
        ("乙方对产品质量问题承担保修责任，保修期为{years}年。",),
        ("The Seller shall not be liable for any defect of the goods.",),
        ("The Seller warrants the goods for {years} years.",),
        Risk("免责条款排除主要义务", "高", "民法典第四百九十七条", "删除排除对方主要权利的免责条款", "免责"),
        Risk("Exemption voids core duty", "高", "Civil Code Art. 497", "Remove the blanket exemption", "liable"),
    ),
)

# The paraphrase split (issue 35's honest measurement): for each clause kind, risky and safe wordings that no
# training contract, eval case, reviewer's contract or retrieval-corpus entry uses (`contract` draws them only
# with `paraphrased=True`), so a held-out contract's risks must be recognised, not recalled. Written for this
# split by the project (not from a published source): (risky_zh, safe_zh, risky_en, safe_en).
PARAPHRASES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "payment": (
        ("甲方将视自身经营状况择机支付货款{amount}元。", "价款{amount}元的支付时间由甲方另行通知。"),
        ("甲方须在收到发票之日起{days}日内付清全部价款{amount}元。",),
        (
            "The purchase price of {amount} yuan will be paid whenever the Buyer's cash flow allows.",
            "The Buyer will settle the {amount} yuan invoice on a date it chooses later.",
        ),
        ("The Buyer must pay the full {amount} yuan no later than {days} days after receiving the invoice.",),
    ),
    "penalty": (
        (
            "若乙方迟延履行，须按合同金额的{pct}%向甲方缴纳罚金。",
            "一方违反本协议的，应支付相当于合同总价{pct}%的赔偿金。",
        ),
        ("违约一方应当赔偿对方由此产生的直接经济损失。",),
        (
            "A party in breach owes a penalty equal to {pct}% of the total contract value.",
            "Late performance by the Seller incurs a fine of {pct}% of the contract sum.",
        ),
        ("A party in breach must make good the direct losses the other party actually suffered.",),
    ),
    "confidentiality": (
        (
            "合作期间知悉的对方资料，任一方均可不受限制地向第三方提供。",
            "双方无须对合作中接触到的对方技术和经营信息保密。",
        ),
        ("未经对方书面同意，任何一方不得向第三方泄露对方的商业秘密，该义务持续{years}年。",),
        (
            "Each party is free to share the other's information with third parties without restriction.",
            "Neither party owes any duty of secrecy regarding the other's business information.",
        ),
        ("Neither party may reveal the other's trade secrets to third parties for {years} years without consent.",),
    ),
    "termination": (
        ("甲方有权在任何时候终止本协议，且不负任何赔偿责任。", "本合同仅甲方可以提前终止，乙方不得提出终止。"),
        ("一方根本违约且在收到书面通知后{days}日内仍未纠正的，守约方有权终止合同。",),
        (
            "The Buyer can end this agreement whenever it wishes and owes nothing for doing so.",
            "Only the Buyer has the right to end this agreement early; the Seller has none.",
        ),
        ("If a party fails to remedy a serious breach within {days} days of written notice, the other may end it.",),
    ),
    "jurisdiction": (
        ("双方如有分歧，应友好商量处理。", "合同履行中产生的纠纷由双方自行沟通解决。"),
        ("本合同项下的纠纷，由{city}仲裁委员会按其规则裁决。",),
        (
            "Any disagreement will be resolved amicably between the parties.",
            "The parties will sort out any conflicts by talking to each other.",
        ),
        ("All disputes under this agreement go to the courts of {city}.",),
    ),
    "ip": (
        ("项目产出的知识产权归谁所有，由双方日后协商确定。", "工作成果的权利归属待项目结束后再行约定。"),
        ("本项目产生的全部知识产权属于甲方，乙方享有署名的权利。",),
        (
            "Who holds the rights to the work product will be decided by the parties at a later date.",
            "Title to the project's results is to be settled after the project ends.",
        ),
        ("The Buyer owns all intellectual property rights created under this project.",),
    ),
    "exemption": (
        ("乙方对所交付货物的质量瑕疵概不负责。", "无论何种原因造成的人身伤害，乙方均免除责任。"),
        ("乙方对交付产品的质量提供{years}年的保修服务。",),
        (
            "The Seller accepts no responsibility whatsoever for faults in the delivered goods.",
            "The Seller is exempt from all liability for personal injury, whatever the cause.",
        ),
        ("The Seller guarantees the quality of the delivered goods for {years} years.",),
    ),
}

CITIES_ZH = ("北京", "上海", "深圳", "杭州", "成都", "武汉")
CITIES_EN = ("Beijing", "Shanghai", "Shenzhen", "Hangzhou", "Chengdu", "Wuhan")
SUBJECTS_ZH = ("软件开发", "设备采购", "技术服务", "房屋租赁", "货物买卖", "咨询服务")
SUBJECTS_EN = ("software development", "equipment purchase", "technical services", "sale of goods")


@dataclass(frozen=True)
class Example:
    case_id: str
    language: str
    text: str
    risks: tuple[Risk, ...] = field(default_factory=tuple)

    @property
    def answer(self) -> dict[str, list[dict[str, str]]]:
        return {"risk_points": [risk.as_json() for risk in self.risks]}


def _fill(template: str, rng: random.Random, english: bool) -> str:
    return template.format(
        amount=rng.choice((50000, 120000, 300000, 800000, 1500000)),
        days=rng.choice((7, 10, 15, 30, 60)),
        pct=rng.choice((20, 30, 50, 80)),
        years=rng.choice((1, 2, 3, 5)),
        city=rng.choice(CITIES_EN if english else CITIES_ZH),
    )


def contract(rng: random.Random, case_id: str, language: str | None = None, *, paraphrased: bool = False) -> Example:
    """One contract of 2 to 4 clauses, each risky with probability 1/2 (`paraphrased`: in `PARAPHRASES`' wordings)."""
    language = language or rng.choice(("zh", "zh", "en"))
    english = language == "en"
    kinds = rng.sample(CLAUSES, rng.randint(2, 4))
    clauses, risks = [], []
    for number, kind in enumerate(kinds, start=1):
        risky = rng.random() < 0.5
        risky_zh, safe_zh, risky_en, safe_en = (
            PARAPHRASES[kind.name] if paraphrased else (kind.risky_zh, kind.safe_zh, kind.risky_en, kind.safe_en)
        )
        options = (risky_en if risky else safe_en) if english else (risky_zh if risky else safe_zh)
        text = _fill(rng.choice(options), rng, english)
        clauses.append(f"{number}. {text}" if english else f"第{number}条 {text}")
        if risky:
            risks.append(kind.risk_en if english else kind.risk_zh)
    if english:
        head = f"Contract No. HT-{rng.randint(1000, 9999)} for {rng.choice(SUBJECTS_EN)}."
    else:
        head = f"合同编号HT-{rng.randint(1000, 9999)}，{rng.choice(SUBJECTS_ZH)}合同。"
    return Example(case_id, language, "\n".join([head, *clauses]), tuple(risks))


def examples(seed: int, count: int, prefix: str, *, paraphrased: bool = False) -> list[Example]:
    rng = random.Random(seed)
    return [contract(rng, f"{prefix}-{i:04d}", paraphrased=paraphrased) for i in range(count)]


def legal_basis() -> list[dict[str, str]]:
    """The retrieval corpus the demo configures: for each clause kind, in each language, the risk it carries and
    its legal basis, with the risky wordings it shows up as (so a contract's clause finds its entry)."""
    entries = []
    for kind in CLAUSES:
        for risk, wordings in ((kind.risk_zh, kind.risky_zh), (kind.risk_en, kind.risky_en)):
            shown = " / ".join(w.format(amount="", days="", pct="", years="", city="") for w in wordings)
            text = f"{risk.point}（{risk.basis}，风险{risk.level}）: {shown} -> {risk.suggestion}"
            entries.append({"kind": kind.name, "basis": risk.basis, "text": text})
    return entries

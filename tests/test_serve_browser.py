"""The search page in a real browser: Debian's chromium, headless, driven by Selenium.

The page is loaded from a server on a free loopback port, the prefilled example state is
submitted with Ctrl+Enter, and the results must be the service's own ranking. Screenshots go
to the test's tmp folder and to test-artifacts/ (git-ignored). Needs `chromium` and
`chromium-driver` (apt); .ci/run installs them, and there PROVER_REQUIRE_BROWSER=1 turns a
missing browser into a failure instead of a skip.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import shutil
from pathlib import Path

import pytest

from conftest import REPO
from prover.config import load_config
from prover.serve.app import create_app
from prover.serve.server import BackgroundServer
from prover.serve.service import SearchService
from prover.serve.settings import ServeConfig
from serve_models import models_yaml, standin_run

ARTIFACTS = REPO / "test-artifacts"


def _browser() -> tuple[str, str]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        message = ("needs a browser: chromium and chromedriver not found: `apt-get install -y chromium chromium-driver` "
                   "(.ci/run does this)")
        if os.environ.get("PROVER_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    return chromium, driver


@pytest.fixture(scope="module")
def service(tmp_path_factory, mini_root: Path, one_thread):
    run_dir = standin_run(tmp_path_factory, mini_root)
    models = models_yaml(tmp_path_factory.mktemp("models"), run_dir, mini_root)
    cfg = load_config(ServeConfig, None, [f"retriever.run_dir={run_dir}", f"retriever.corpus={mini_root}",
                                          f"retriever.models={models}", "retrievers=[cfr,bm25]",
                                          "retriever.device=cpu"])
    svc = SearchService(cfg)
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def page_url(service):
    with BackgroundServer(create_app(service)) as srv:
        yield srv.url + "/"


@pytest.fixture(scope="module")
def browser():
    chromium, driver_path = _browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1200,1400", "--no-first-run", "--disable-extensions"):
        opts.add_argument(arg)
    # An explicit driver path: Selenium Manager would otherwise try to download one.
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def screenshot(driver, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / f"{name}.png"
    assert driver.save_screenshot(str(shot)), "screenshot failed"
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(shot, ARTIFACTS / shot.name)
    assert shot.stat().st_size > 10_000  # a rendered page, not an empty image
    return shot


def test_page_searches_the_example_state(browser, page_url, service, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(page_url)
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    state = browser.find_element(By.ID, "state")
    assert state.get_property("value") == service.cfg.example_state  # prefilled
    options = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#retriever option")]
    assert options == ["cfr", "bm25"]
    assert browser.find_element(By.ID, "rerank").is_selected()  # CAR is loaded: on by default

    k = browser.find_element(By.ID, "k")
    k.clear()
    k.send_keys("7")
    state.send_keys(Keys.CONTROL, Keys.ENTER)  # keyboard submit
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "li.result")) == 7)

    want = service.search(service.cfg.example_state, 7, rerank=True, retriever="cfr").hits
    items = browser.find_elements(By.CSS_SELECTOR, "li.result")
    assert [i.get_attribute("data-name") for i in items] == [h.premise.full_name for h in want]
    first = items[0]
    assert first.find_element(By.CSS_SELECTOR, ".name").text == want[0].premise.full_name
    assert first.find_element(By.CSS_SELECTOR, ".stmt").text.startswith("<VAR>")
    p = want[0].premise
    assert first.find_element(By.CSS_SELECTOR, ".where").text == f"{p.path}:{p.start[0]}"
    assert first.find_element(By.CSS_SELECTOR, "button.copy").text == "copy"
    assert "7 premises from cfr+car" in browser.find_element(By.ID, "status").text
    screenshot(browser, tmp_path, "serve-page-results")


def test_page_shows_the_error_for_bad_input_and_recovers(browser, page_url, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(page_url)
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    state = browser.find_element(By.ID, "state")
    state.clear()
    browser.find_element(By.ID, "submit").click()
    wait.until(lambda d: "Error 400" in d.find_element(By.ID, "status").text)
    assert "state is empty" in browser.find_element(By.ID, "status").text
    assert browser.find_elements(By.CSS_SELECTOR, "li.result") == []
    screenshot(browser, tmp_path, "serve-page-error")

    state.send_keys("⊢ ∀ (n : ℕ), n + 0 = n")
    browser.find_element(By.ID, "submit").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "li.result")) == 10)


def test_page_searches_within_a_file(browser, page_url, service, tmp_path):
    """An optional file (and line) limits the results to the premises usable there."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    corpus = service.loaded.corpus
    path = next(p for p in corpus.files if p.startswith("Mathlib/") and corpus.imports[corpus.file_index[p]])
    browser.get(page_url)
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    browser.find_element(By.ID, "file_path").send_keys(path.removesuffix(".lean").replace("/", "."))
    browser.find_element(By.ID, "line").send_keys("30")
    browser.find_element(By.ID, "submit").click()
    want = service.search(service.cfg.example_state, 10, rerank=True, retriever="cfr", file_path=path,
                          position=[30, 1])
    wait.until(lambda d: "usable in" in d.find_element(By.ID, "status").text)
    items = browser.find_elements(By.CSS_SELECTOR, "li.result")
    assert [i.get_attribute("data-name") for i in items] == [h.premise.full_name for h in want.hits]
    assert f"of {want.context.accessible:,} usable in {path}:30" in browser.find_element(By.ID, "status").text
    screenshot(browser, tmp_path, "serve-page-file")


@pytest.fixture(scope="module")
def informal_url(mini_root: Path, one_thread):
    cfg = load_config(ServeConfig, None, [f"retriever.corpus={mini_root}", "retrievers=[bm25,informal]", "rerank=false",
                                          "retriever.device=cpu"])
    svc = SearchService(cfg)
    with BackgroundServer(create_app(svc)) as srv:
        yield srv.url + "/", svc
    svc.close()


def test_page_runs_an_informal_query(browser, informal_url, tmp_path):
    """Issue 51: the page offers the informal mode when the service has it, and each hit shows
    the words it matched."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    url, service = informal_url
    query = "addition is associative"
    browser.get(url)
    wait = WebDriverWait(browser, 60)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-ready") == "1")
    assert browser.find_element(By.ID, "mode-label").is_displayed()
    Select(browser.find_element(By.ID, "mode")).select_by_value("informal")
    assert not browser.find_element(By.ID, "retriever").is_enabled()  # informal: its own retriever
    state = browser.find_element(By.ID, "state")
    state.clear()
    state.send_keys(query)
    browser.find_element(By.ID, "submit").click()
    wait.until(lambda d: "from informal" in d.find_element(By.ID, "status").text)
    want = service.search(query, 10, retriever="informal").hits
    items = browser.find_elements(By.CSS_SELECTOR, "li.result")
    assert [i.get_attribute("data-name") for i in items] == [h.premise.full_name for h in want]
    hit = next(i for i in items if i.get_attribute("data-name") == "add_assoc")
    assert "associative→assoc" in hit.find_element(By.CSS_SELECTOR, ".matched").text
    screenshot(browser, tmp_path, "serve-page-informal")

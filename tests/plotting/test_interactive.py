"""``landscape export --html``: a self-contained page, opened in a real headless browser (Debian's
chromium through Selenium): it loads with no console error and no network, draws its 3-D canvases,
and its log toggle and quantity selector move every panel's z axis together."""

import math
import os
import shutil
import time

import pytest
import torch

from landscape.io.checkpoint import save
from landscape.models import build_model

from conftest import landscape

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and DRIVER):
        if os.environ.get("CI"):
            pytest.fail("chromium and chromedriver are needed in CI (make test-browser installs them)")
        pytest.skip("needs chromium and chromedriver (apt-get install chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1400,800",
        "--enable-unsafe-swiftshader",
        "--use-angle=swiftshader",
    ):  # WebGL without a GPU
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def surfaces(tmp_path):
    paths = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        save(build_model("digits_mlp"), str(tmp_path / f"m{seed}.pt"))
        assert (
            landscape(
                "surface",
                "--model",
                "digits_mlp",
                "--model_file",
                tmp_path / f"m{seed}.pt",
                "--x=-1:1:5",
                "--y=-1:1:4",
                "--train_subset",
                "60",
                "--threads",
                "1",
                "--quiet",
                "--surf_file",
                tmp_path / f"s{seed}.h5",
            )
            == 0
        )
        paths.append(tmp_path / f"s{seed}.h5")
    return paths


@pytest.mark.browser
def test_the_page_loads_offline_draws_3d_and_its_controls_work(tmp_path, browser, one_thread, capsys):
    a, b = surfaces(tmp_path)
    assert landscape("export", a, b, "--html", "--labels", "seed 0", "seed 1", "--out", tmp_path / "page") == 0
    browser.get_log("browser")  # forget what came before
    browser.get((tmp_path / "page.html").as_uri())
    for _ in range(100):
        canvases = browser.execute_script(
            "return Array.from(document.querySelectorAll('canvas')).filter(c => c.width > 0 && c.height > 0).length"
        )
        if canvases >= 2:
            break
        time.sleep(0.2)
    assert canvases >= 2, "no 3-D canvas was drawn"
    webgl = browser.execute_script(
        "var gd = document.querySelector('.js-plotly-plot');return gd._fullLayout.scene._scene.glplot !== undefined"
    )
    assert webgl
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(r => r.name)")
    assert [url for url in fetched if url.startswith("http")] == []  # everything inline: opens offline
    state = (
        "var gd = document.querySelector('.js-plotly-plot'); return [gd.layout.scene.zaxis.range, "
        "gd.layout.scene2.zaxis.range, gd.data.filter(t => t.visible === true).map(t => t.name)];"
    )
    first, second, visible = browser.execute_script(state)
    assert first == second and sorted(visible) == ["seed 0 train_loss", "seed 1 train_loss"]
    buttons = {b.text: b for b in browser.find_elements("css selector", ".updatemenu-button")}
    buttons["log10"].click()
    time.sleep(1.0)
    log_first, log_second, _ = browser.execute_script(state)
    assert log_first == log_second and log_first[1] < first[1]  # log10 of the losses: a lower top
    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert severe == [], severe
    hover = browser.execute_script("return document.querySelector('.js-plotly-plot').data[0].hovertemplate")
    assert "α" in hover and "β" in hover and "train_loss" in hover and "train_acc" in hover
    # --log opens the page on log10, --zmax leaves gaps; "linear" then shows values up to zmax only
    from landscape.io.surface_file import read

    zmax = float(sorted(read(str(a)).values["train_loss"].ravel())[10])  # about half the points above it
    assert landscape("export", a, b, "--html", "--log", "--zmax", str(zmax), "--out", tmp_path / "capped") == 0
    browser.get((tmp_path / "capped.html").as_uri())
    time.sleep(2.0)
    opened, _, _ = browser.execute_script(state)
    assert opened[1] <= math.log10(zmax) + 1e-9
    {b.text: b for b in browser.find_elements("css selector", ".updatemenu-button")}["linear"].click()
    time.sleep(1.0)
    linear, _, _ = browser.execute_script(state)
    assert linear[1] <= zmax + 1e-9
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_log_and_zmax_shape_the_page_as_they_shape_the_vtk_file(tmp_path, one_thread, capsys):
    import numpy as np

    from landscape.io.surface_file import read
    from landscape.plotting import interactive

    a, b = surfaces(tmp_path)
    loss = read(str(a)).values["train_loss"]
    zmax = float(np.median(loss))
    fig, script = interactive.build([read(str(a)), read(str(b))], first="train_loss", log=True, zmax=zmax)
    shown = [t for t in fig.data if t.visible is True]
    z = np.array(shown[0].z, dtype=float)  # log10, with gaps where the loss is above zmax
    assert np.isnan(z).sum() == (loss > zmax).sum() > 0
    assert np.nanmax(z) <= math.log10(zmax) + 1e-12 and fig.layout.scene.zaxis.range[1] <= math.log10(zmax) + 1e-9
    assert fig.layout.updatemenus[1].active == 1 and 'scale: "log"' in script
    assert shown[0].colorbar.title.text.startswith("log₁₀")
    hidden_too = np.array([t for t in fig.data if t.name.endswith("train_acc")][0].z, dtype=float)
    assert np.isnan(hidden_too).sum() == np.isnan(z).sum()  # the same points are gaps in every quantity
    flat, _ = interactive.build([read(str(a))])
    assert fig.layout.updatemenus[1].active == 1 and flat.layout.updatemenus[1].active == 0
    assert not np.isnan(np.array([t for t in flat.data if t.visible is True][0].z, dtype=float)).any()


def test_a_1d_surface_is_refused(tmp_path, capsys, one_thread):
    torch.manual_seed(0)
    save(build_model("digits_mlp"), str(tmp_path / "m.pt"))
    assert (
        landscape(
            "surface",
            "--model",
            "digits_mlp",
            "--model_file",
            tmp_path / "m.pt",
            "--x=-1:1:3",
            "--train_subset",
            "30",
            "--quiet",
            "--surf_file",
            tmp_path / "one.h5",
        )
        == 0
    )
    assert landscape("export", tmp_path / "one.h5", "--html") == 2
    assert "1-D surface: the 3-D page needs 2-D surfaces" in capsys.readouterr().err
    assert not (tmp_path / "one.html").exists()

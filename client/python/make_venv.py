"""Makes DIR a Python environment that sees Debian's packages (python3-grpcio, python3-protobuf,
python3-etcd3) and the client CMake assembled in SITE, whatever `python3` on PATH is:

    /usr/bin/python3 client/python/make_venv.py DIR SITE

DIR/bin/python3 then runs the README's examples as written. No pip and no network: the client
is added to the environment by a .pth file naming SITE, so a rebuild is seen at once.
"""

import pathlib
import sys
import sysconfig
import venv


def main() -> None:
    env, site = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2]).resolve()
    venv.EnvBuilder(system_site_packages=True, with_pip=False, clear=True,
                    symlinks=True).create(env)
    purelib = pathlib.Path(sysconfig.get_path("purelib", vars={"base": str(env)}))
    purelib.mkdir(parents=True, exist_ok=True)
    (purelib / "grove-client.pth").write_text(f"{site}\n")


if __name__ == "__main__":
    main()

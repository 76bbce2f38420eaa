from ecomrlve.cli import app

app(prog_name="ecomrlve")

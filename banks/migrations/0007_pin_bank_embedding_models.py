"""Banks keep the embedding model their memories were embedded with.

The server default became a semantic model (all-MiniLM-L6-v2); a bank whose provider was
left to the default has vectors of the previous default (hashing). Pin each such bank to the
model its memories carry, so its recall keeps working; moving it to the new model is a
re-embedding job from the bank settings.
"""

from django.db import migrations


def spec_for(model_name: str) -> str | None:
    if model_name.startswith("hashing-"):
        return "hashing:" + model_name.removeprefix("hashing-")
    if model_name.startswith(("sentence-transformers:", "openai:")):
        return model_name
    if model_name == "all-MiniLM-L6-v2":
        return "minilm"
    return None


def pin(apps, schema_editor):  # noqa: ANN001, ANN201
    Bank = apps.get_model("banks", "Bank")
    Memory = apps.get_model("banks", "Memory")
    for bank in Bank.objects.filter(embedding_provider=""):
        model_name = (Memory.objects.filter(bank=bank).exclude(embedding_model="")
                      .order_by("-id").values_list("embedding_model", flat=True).first())
        spec = spec_for(model_name or "")
        if spec:
            Bank.objects.filter(pk=bank.pk).update(embedding_provider=spec)


class Migration(migrations.Migration):
    dependencies = [("banks", "0006_legal_holds")]

    operations = [migrations.RunPython(pin, migrations.RunPython.noop)]

from evallocal.messages import input_text, output_text


def test_strings_pass_through():
    assert input_text("hi") == "hi"
    assert output_text("there") == "there"


def test_output_last_assistant_message_with_text():
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "first"},
        {"role": "assistant", "content": "second"},
        {"role": "assistant", "content": ""},  # no text: skipped
        {"role": "tool", "content": "tool output"},
    ]
    assert output_text(messages) == "second"


def test_output_content_parts_take_last_text_part():
    message = {"role": "assistant", "content": [
        {"type": "text", "text": "one"}, {"type": "tool-call", "toolName": "x"}, {"type": "text", "text": "two"}]}
    assert output_text([message]) == "two"


def test_output_parts_field_and_text_field():
    assert output_text([{"role": "assistant", "parts": [{"type": "text", "text": "from parts"}]}]) == "from parts"
    assert output_text([{"role": "assistant", "content": None, "text": "from text"}]) == "from text"


def test_output_without_text_is_empty():
    assert output_text([{"role": "assistant", "content": [{"type": "tool-call"}]}]) == ""
    assert output_text([]) == ""


def test_input_first_user_message_of_input_messages_then_messages():
    run_input = {
        "inputMessages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "the question"},
                          {"role": "user", "content": "later"}],
        "messages": [{"role": "user", "content": "not this"}],
    }
    assert input_text(run_input) == "the question"
    assert input_text({"messages": [{"role": "user", "parts": [{"type": "text", "text": "p"}]}]}) == "p"
    assert input_text([{"role": "user", "content": "list form"}]) == "list form"


def test_input_without_user_message_is_empty():
    assert input_text({"inputMessages": [{"role": "system", "content": "s"}]}) == ""


def test_objects_with_attributes_work():
    class Message:
        def __init__(self, role, content):
            self.role, self.content = role, content

    assert output_text([Message("assistant", "attr text")]) == "attr text"

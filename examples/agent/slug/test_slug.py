import unittest

from slug import slugify


class SlugifyTest(unittest.TestCase):
    def test_words_are_lowercased_and_joined_by_hyphens(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation_is_dropped(self):
        self.assertEqual(slugify("Hello, World!"), "hello-world")

    def test_runs_of_separators_become_one_hyphen(self):
        self.assertEqual(slugify("a  --  b__c"), "a-b-c")

    def test_no_hyphen_at_either_end(self):
        self.assertEqual(slugify("  -Trim me-  "), "trim-me")

    def test_accents_are_folded_to_ascii(self):
        self.assertEqual(slugify("Crème Brûlée à la Ünïcode"), "creme-brulee-a-la-unicode")

    def test_digits_are_kept(self):
        self.assertEqual(slugify("Top 10 of 2024"), "top-10-of-2024")

    def test_nothing_left_is_an_empty_slug(self):
        self.assertEqual(slugify("!!!"), "")


if __name__ == "__main__":
    unittest.main()

use roman::to_roman;

#[test]
fn single_symbols() {
    assert_eq!(to_roman(1).as_deref(), Some("I"));
    assert_eq!(to_roman(5).as_deref(), Some("V"));
    assert_eq!(to_roman(1000).as_deref(), Some("M"));
}

#[test]
fn additive_forms() {
    assert_eq!(to_roman(3).as_deref(), Some("III"));
    assert_eq!(to_roman(27).as_deref(), Some("XXVII"));
}

#[test]
fn subtractive_forms() {
    assert_eq!(to_roman(4).as_deref(), Some("IV"));
    assert_eq!(to_roman(9).as_deref(), Some("IX"));
    assert_eq!(to_roman(40).as_deref(), Some("XL"));
    assert_eq!(to_roman(900).as_deref(), Some("CM"));
}

#[test]
fn mixed() {
    assert_eq!(to_roman(1994).as_deref(), Some("MCMXCIV"));
    assert_eq!(to_roman(3999).as_deref(), Some("MMMCMXCIX"));
}

#[test]
fn out_of_range_is_none() {
    assert_eq!(to_roman(0), None);
    assert_eq!(to_roman(4000), None);
}
